#include "harness/content/data_url.h"

#include "harness/core/base64.h"

namespace harness {

std::string DataUrl(std::string_view media_type, std::string_view bytes) {
  std::string url("data:");
  url.append(media_type);
  url.append(";base64,");
  AppendBase64(url, bytes);
  return url;
}

ImageBlock ImageFromUrl(std::string_view url) {
  constexpr std::string_view kData = "data:";
  constexpr std::string_view kBase64 = ";base64,";
  const std::size_t marker = url.find(kBase64);
  if (url.substr(0, kData.size()) == kData && marker != std::string_view::npos) {
    std::optional<std::string> bytes = Base64Decode(url.substr(marker + kBase64.size()));
    if (bytes) {
      return ImageBlock{std::string(url.substr(kData.size(), marker - kData.size())), "",
                        std::move(bytes)};
    }
  }
  return ImageBlock{"", std::string(url), std::nullopt};
}

}  // namespace harness
