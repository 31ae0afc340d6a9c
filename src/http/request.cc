#include "harness/http/request.h"

#include <string>

#include "harness/http/client.h"

namespace harness {

std::optional<std::string_view> HttpResponse::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name)
      return std::string_view(value);
  }
  return std::nullopt;
}

Result<HttpResponse, HttpError> HttpClient::Fetch(const HttpRequest& request,
                                                  std::stop_token stop) {
  std::string body;
  auto response = Stream(
      request,
      [&body](std::string_view bytes) {
        body.append(bytes);
        // Every byte of a collected body is part of the answer.
        return SinkVerdict::kProgress;
      },
      std::move(stop));
  if (response.ok() && response->success())
    response->body = std::move(body);
  return response;
}

}  // namespace harness
