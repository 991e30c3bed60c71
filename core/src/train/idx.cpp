// IDX files (the MNIST family's format) as a Dataset; see data.h.
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "large_pages.h"
#include "ringmaster/train/data.h"

namespace ringmaster::train {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;
constexpr size_t kMaxDims = 8;
constexpr size_t kGzBuffer = 1 << 20;

std::string hex(unsigned value) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out = "0x";
  out += kDigits[(value >> 4) & 0xf];
  out += kDigits[value & 0xf];
  return out;
}

const char* typeName(uint8_t type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0b:
      return "short";
    case 0x0c:
      return "int";
    case 0x0d:
      return "float";
    case 0x0e:
      return "double";
    default:
      return "unknown";
  }
}

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly `size` bytes; false at the end of the data or on an error (`why` says which).
bool readExactly(gzFile file, void* out, size_t size, std::string* why) {
  auto* bytes = static_cast<uint8_t*>(out);
  while (size > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(size, 1u << 30));
    const int got = gzread(file, bytes, chunk);
    if (got < 0) {
      int code = 0;
      *why = gzerror(file, &code);
      return false;
    }
    if (got == 0) {
      *why = "the file ends early";
      return false;
    }
    bytes += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

// An open IDX file of unsigned bytes, read up to its first value.
struct IdxHeader {
  GzFile file;
  std::vector<uint32_t> dims;
  uint64_t values = 0;  // the product of dims
};

// gzread reads a plain file as it is, so one path serves `.gz` and uncompressed files alike.
Result<IdxHeader> openIdx(const std::string& path, size_t want_dims) {
  IdxHeader idx{GzFile(gzopen(path.c_str(), "rb")), {}, 0};
  if (!idx.file) return ioError(path + ": cannot open the IDX file");
  gzFile file = idx.file.get();
  gzbuffer(file, kGzBuffer);
  std::string why;
  std::array<uint8_t, 4> magic{};
  if (!readExactly(file, magic.data(), magic.size(), &why)) {
    return invalidArgument(path + ": not an IDX file (" + why + " in its 4-byte header)");
  }
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0 || magic[3] > kMaxDims) {
    return invalidArgument(path + ": not an IDX file (its first bytes are " + hex(magic[0]) + " " +
                           hex(magic[1]) + " " + hex(magic[2]) + " " + hex(magic[3]) +
                           "; an IDX file starts 0x00 0x00, a type, a dimension count)");
  }
  if (magic[2] != kUnsignedByte) {
    return invalidArgument(path + ": holds " + typeName(magic[2]) + " values (type " +
                           hex(magic[2]) + "); only unsigned bytes (0x08) are read");
  }
  if (want_dims == 1 ? magic[3] != 1 : magic[3] < 2) {
    return invalidArgument(path + ": has " + std::to_string(magic[3]) + " dimension(s); " +
                           (want_dims == 1 ? "labels have 1" : "images have 2 or more"));
  }
  idx.dims.resize(magic[3]);
  uint64_t total = 1;
  for (uint32_t& dim : idx.dims) {
    std::array<uint8_t, 4> be{};
    if (!readExactly(file, be.data(), be.size(), &why)) {
      return invalidArgument(path + ": " + why + " in the dimension sizes");
    }
    dim = (uint32_t{be[0]} << 24) | (uint32_t{be[1]} << 16) | (uint32_t{be[2]} << 8) | be[3];
    total *= dim;
    if (total > (uint64_t{1} << 34)) {
      return invalidArgument(path + ": dimensions too large (over 16 GiB of values)");
    }
  }
  if (total == 0) return invalidArgument(path + ": holds no values (a dimension is 0)");
  idx.values = total;
  return idx;
}

// Appends the file's values to `out` as floats, a chunk at a time (no byte copy of the whole
// file), and checks that nothing follows them.
Status readValues(IdxHeader& idx, const std::string& path, std::vector<float>* out) {
  std::vector<uint8_t> chunk(std::min<uint64_t>(idx.values, kGzBuffer));
  std::string why;
  for (uint64_t left = idx.values; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
    if (!readExactly(idx.file.get(), chunk.data(), n, &why)) {
      return invalidArgument(path + ": " + why + " (expected " + std::to_string(idx.values) +
                             " values after the header)");
    }
    out->insert(out->end(), chunk.begin(), chunk.begin() + static_cast<long>(n));
    left -= n;
  }
  uint8_t extra = 0;
  if (gzread(idx.file.get(), &extra, 1) != 0) {
    return invalidArgument(path + ": has data past the " + std::to_string(idx.values) +
                           " values its header announces");
  }
  return Status::ok();
}

}  // namespace

Result<Dataset> loadIdx(const IdxFiles& files) {
  RM_ASSIGN_OR_RETURN(IdxHeader images, openIdx(files.images, 2));
  RM_ASSIGN_OR_RETURN(IdxHeader labels, openIdx(files.labels, 1));
  const size_t count = images.dims[0];
  if (labels.dims[0] != count) {
    return invalidArgument(files.images + " holds " + std::to_string(count) + " images but " +
                           files.labels + " holds " + std::to_string(labels.dims[0]) + " labels");
  }
  Dataset data;
  data.task = Task::kClassification;
  data.features = static_cast<size_t>(images.values / count);
  // The room for every value is taken before reading (a header that claims more than the file
  // holds is caught by the read), so a header beyond this host's memory is refused first.
  const uint64_t bytes = images.values * sizeof(float);
  const uint64_t memory = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                          static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (bytes > memory) {
    return Status(ErrorCode::kResourceExhausted,
                  files.images + ": its " + std::to_string(images.values) + " values take " +
                      std::to_string(bytes >> 20) + " MiB as floats, more than this host's " +
                      std::to_string(memory >> 20) + " MiB of memory");
  }
  reserveLargePages(&data.x, static_cast<size_t>(images.values));
  RM_RETURN_IF_ERROR(readValues(images, files.images, &data.x));
  data.y.reserve(count);
  RM_RETURN_IF_ERROR(readValues(labels, files.labels, &data.y));
  data.classes = static_cast<size_t>(*std::max_element(data.y.begin(), data.y.end())) + 1;
  if (data.classes < 2) {
    return invalidArgument(files.labels + ": every label is 0; classification needs 2 classes");
  }
  return data;
}

Result<IdxSplitFiles> fashionMnistFiles(const std::string& dir) {
  IdxSplitFiles files;
  files.train = {dir + "/train-images-idx3-ubyte.gz", dir + "/train-labels-idx1-ubyte.gz"};
  files.test = {dir + "/t10k-images-idx3-ubyte.gz", dir + "/t10k-labels-idx1-ubyte.gz"};
  for (const std::string* path :
       {&files.train.images, &files.train.labels, &files.test.images, &files.test.labels}) {
    if (::access(path->c_str(), R_OK) != 0) {
      return notFound(*path +
                      ": Fashion-MNIST is not installed on this host (install the Debian "
                      "package dataset-fashion-mnist: apt-get install dataset-fashion-mnist)");
    }
  }
  return files;
}

}  // namespace ringmaster::train
