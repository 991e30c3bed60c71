#pragma once
// Status and Result<T>: how core reports failure. core's public API throws nothing.

#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace ringmaster {

// Mirrors proto::ErrorCode; values never change.
enum class ErrorCode : int {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kUnavailable = 3,
  kUnauthorized = 4,
  kTimeout = 5,
  kProtocol = 6,
  kIo = 7,
  kInternal = 8,
  kAlreadyExists = 9,
  kResourceExhausted = 10,
  kCancelled = 11,
  kUnsupportedVersion = 12,
  kUnimplemented = 13,
};

const char* errorCodeName(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NOT_FOUND: no such job" (or "OK").
  std::string toString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalidArgument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Status notFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Status unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }
inline Status ioError(std::string m) { return {ErrorCode::kIo, std::move(m)}; }
inline Status internalError(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }
inline Status protocolError(std::string m) { return {ErrorCode::kProtocol, std::move(m)}; }
inline Status timeoutError(std::string m) { return {ErrorCode::kTimeout, std::move(m)}; }

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {   // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).isOk()) std::abort();  // an error Result needs an error Status
  }

  bool isOk() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return isOk(); }

  // REQUIRES: isOk()
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  Status status() const { return isOk() ? Status::ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ringmaster

#define RM_CONCAT_INNER(a, b) a##b
#define RM_CONCAT(a, b) RM_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) is not ok.
#define RM_RETURN_IF_ERROR(expr)               \
  do {                                         \
    ::ringmaster::Status rm_status_ = (expr);  \
    if (!rm_status_.isOk()) return rm_status_; \
  } while (0)

// `RM_ASSIGN_OR_RETURN(auto x, resultExpr);`
#define RM_ASSIGN_OR_RETURN(lhs, expr) \
  RM_ASSIGN_OR_RETURN_IMPL(RM_CONCAT(rm_result_, __LINE__), lhs, expr)
#define RM_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.isOk()) return tmp.status();          \
  lhs = std::move(tmp.value())
