#include "ringmaster/util/result.h"

namespace ringmaster {

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "OK";
    case ErrorCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case ErrorCode::kNotFound:
      return "NOT_FOUND";
    case ErrorCode::kUnavailable:
      return "UNAVAILABLE";
    case ErrorCode::kUnauthorized:
      return "UNAUTHORIZED";
    case ErrorCode::kTimeout:
      return "TIMEOUT";
    case ErrorCode::kProtocol:
      return "PROTOCOL";
    case ErrorCode::kIo:
      return "IO";
    case ErrorCode::kInternal:
      return "INTERNAL";
    case ErrorCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case ErrorCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case ErrorCode::kCancelled:
      return "CANCELLED";
    case ErrorCode::kUnsupportedVersion:
      return "UNSUPPORTED_VERSION";
    case ErrorCode::kUnimplemented:
      return "UNIMPLEMENTED";
  }
  return "UNKNOWN";
}

std::string Status::toString() const {
  if (isOk()) return "OK";
  return std::string(errorCodeName(code_)) + ": " + message_;
}

}  // namespace ringmaster
