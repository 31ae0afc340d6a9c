#include "serve/request_head.h"

#include <microhttpd.h>

#include <cstring>
#include <functional>
#include <string>
#include <string_view>

namespace harness::serve {

namespace {

MHD_Result CollectHeader(void* cls, MHD_ValueKind kind, const char* key, std::size_t key_size,
                         const char* value, std::size_t value_size) {
  auto& head = *static_cast<RequestHead*>(cls);
  const std::string_view name(key != nullptr ? key : "", key != nullptr ? key_size : 0);
  const std::string_view text(value != nullptr ? value : "", value != nullptr ? value_size : 0);
  if (kind == MHD_HEADER_KIND)
    head.headers.push_back(HeaderField{name, text});
  head.parsed.push_back(name);
  head.parsed.push_back(text);
  return MHD_YES;
}

}  // namespace

RequestHead ReadHead(MHD_Connection* connection, const char* url, const char* method,
                     const char* version) {
  RequestHead head{method, version != nullptr ? version : "", {}, {}, {}};
  MHD_get_connection_values_n(connection, MHD_HEADER_KIND, CollectHeader, &head);
  MHD_get_connection_values_n(connection, MHD_GET_ARGUMENT_KIND, CollectHeader, &head);
  const MHD_ConnectionInfo* size =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
  if (size != nullptr && version != nullptr) {
    // The head starts at the method (libmicrohttpd 0.9.75 parses it in place): when the path
    // and the version are not inside, this is not that layout, and nothing is judged.
    const std::string_view raw(method, size->header_size);
    head.parsed.insert(head.parsed.end(), {head.method, url, head.version});
    const auto inside = [&](const char* p) {
      return std::less_equal<const char*>()(raw.data(), p) &&
             std::less<const char*>()(p, raw.data() + raw.size());
    };
    if (inside(url) && inside(version))
      head.raw = raw;
  }
  return head;
}

std::size_t UnescapeRequestText(void* /*cls*/, MHD_Connection* /*connection*/, char* text) {
  const std::size_t size = std::strlen(text);
  const std::string decoded = DecodePercent(std::string_view(text, size));
  std::memcpy(text, decoded.data(), decoded.size());
  std::memset(text + decoded.size(), 0, size - decoded.size() + 1);
  return decoded.size();
}

}  // namespace harness::serve
