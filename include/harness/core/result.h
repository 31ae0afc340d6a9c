// Result<T, E>: the value of an operation that can fail, or the typed error that says why.
//
// Contract: no exception crosses the public API of harness. Every fallible public function
// returns Result<T, E>, where E is a small, copyable error type from the domain (for example
// InvalidSummaryError or JsonError). A Result holds exactly one of the two. Reading value() of a
// failed Result (or error() of a successful one) is a programming error and aborts.
//
// Thread safety: a Result is a plain value; const access from several threads is safe.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>
#include <variant>

namespace harness {

// Wraps an error so that `return Fail(e);` converts into any Result<T, E>.
template <class E>
struct Failure {
  E error;
};

template <class E>
[[nodiscard]] Failure<std::decay_t<E>> Fail(E&& error) {
  return {std::forward<E>(error)};
}

namespace detail {
[[noreturn]] inline void ResultMisuse(const char* what) {
  std::fputs(what, stderr);
  std::fputc('\n', stderr);
  std::abort();
}
}  // namespace detail

template <class T, class E>
class [[nodiscard]] Result {
 public:
  using value_type = T;
  using error_type = E;

  Result(const T& value) : state_(std::in_place_index<0>, value) {}  // NOLINT: implicit by design
  Result(T&& value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  template <class G>
  Result(Failure<G> failure)  // NOLINT: implicit by design
      : state_(std::in_place_index<1>, E(std::move(failure.error))) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(Checked(0)); }
  const T& value() const& { return std::get<0>(Checked(0)); }
  T&& value() && { return std::move(std::get<0>(Checked(0))); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const E& error() const& { return std::get<1>(Checked(1)); }
  E&& error() && { return std::move(std::get<1>(Checked(1))); }

 private:
  std::variant<T, E>& Checked(std::size_t index) {
    if (state_.index() != index) {
      detail::ResultMisuse(index == 0 ? "Result::value() on an error"
                                      : "Result::error() on a value");
    }
    return state_;
  }
  const std::variant<T, E>& Checked(std::size_t index) const {
    return const_cast<Result*>(this)->Checked(index);
  }

  std::variant<T, E> state_;
};

// Result of an operation with no value: success, or the error.
template <class E>
class [[nodiscard]] Result<void, E> {
 public:
  using value_type = void;
  using error_type = E;

  Result() = default;
  template <class G>
  Result(Failure<G> failure) : error_(E(std::move(failure.error))), failed_(true) {}  // NOLINT

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const E& error() const& {
    if (!failed_)
      detail::ResultMisuse("Result::error() on success");
    return error_;
  }
  E&& error() && {
    if (!failed_)
      detail::ResultMisuse("Result::error() on success");
    return std::move(error_);
  }

 private:
  E error_{};
  bool failed_ = false;
};

template <class E>
using Status = Result<void, E>;

}  // namespace harness

// HARNESS_TRY(var, expr): evaluates expr (a Result); on failure returns its error from the
// enclosing function, otherwise moves the value into a new local `var`.
#define HARNESS_TRY_CONCAT_(a, b) a##b
#define HARNESS_TRY_NAME_(line) HARNESS_TRY_CONCAT_(harness_try_, line)
#define HARNESS_TRY(var, expr)                                              \
  auto HARNESS_TRY_NAME_(__LINE__) = (expr);                                \
  if (!HARNESS_TRY_NAME_(__LINE__).ok())                                    \
    return ::harness::Fail(std::move(HARNESS_TRY_NAME_(__LINE__)).error()); \
  var = std::move(HARNESS_TRY_NAME_(__LINE__)).value()
// HARNESS_CHECK(expr): evaluates expr (a Status); on failure returns its error.
#define HARNESS_CHECK(expr)                                             \
  do {                                                                  \
    auto harness_check_status_ = (expr);                                \
    if (!harness_check_status_.ok())                                    \
      return ::harness::Fail(std::move(harness_check_status_).error()); \
  } while (0)
