// data: URLs (data_url.h): written canonically, read back as bytes, anything else kept whole.
#include "harness/content/data_url.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

TEST(DataUrl, WritesCanonicalBase64AndReadsItBackAsBytes) {
  EXPECT_EQ(DataUrl("image/png", "abc"), "data:image/png;base64,YWJj");
  const ImageBlock image = ImageFromUrl(DataUrl("image/png", std::string("\0\xff", 2)));
  EXPECT_EQ(image.media_type, "image/png");
  EXPECT_EQ(image.data, std::string("\0\xff", 2));
  EXPECT_EQ(image.url, "");
}

TEST(DataUrl, AnyOtherUrlIsKeptWhole) {
  for (const char* url : {"https://example.com/a.png", "data:image/png;base64,YW=j",
                          "data:text/plain,hello", "file-abc123", ""}) {
    const ImageBlock image = ImageFromUrl(url);
    EXPECT_EQ(image.url, url);
    EXPECT_FALSE(image.data.has_value()) << url;
  }
}

}  // namespace
}  // namespace harness
