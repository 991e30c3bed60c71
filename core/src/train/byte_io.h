#pragma once
// Little helpers to write and read the trainer's binary state (optimizer state, checkpoints).
// Values are stored in the host's byte order; the checkpoint header records it so that a file from
// a machine of the other endianness is refused rather than misread.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace ringmaster::train {

class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}

  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_->append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void putBytes(const void* data, size_t n) {
    if (n > 0) out_->append(static_cast<const char*>(data), n);  // data may be null when n == 0
  }
  // A length-prefixed byte string.
  void putString(std::string_view s) {
    put<uint64_t>(s.size());
    putBytes(s.data(), s.size());
  }

 private:
  std::string* out_;
};

// Reads what ByteWriter wrote. Every read checks the remaining length; after the first short read
// ok() is false and later reads return zeros.
class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}

  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value{};
    getBytes(&value, sizeof(T));
    return value;
  }
  void getBytes(void* data, size_t n) {
    if (n == 0) return;  // data may be null (an empty vector's data())
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      std::memset(data, 0, n);
      return;
    }
    std::memcpy(data, in_.data() + pos_, n);
    pos_ += n;
  }
  std::string_view getString() {
    const auto n = get<uint64_t>();
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }

  bool ok() const { return ok_; }
  size_t remaining() const { return in_.size() - pos_; }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace ringmaster::train
