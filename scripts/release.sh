# Sourced by scripts/setup and scripts/test: what differs between the releases harness builds on.
# Reads /etc/os-release (or $HARNESS_OS_RELEASE, for the test of this file) and sets
#   release          "debian-12", "debian-13", "ubuntu-24.04", or "other (NAME)"
#   clang_version    the clang whose ASan, UBSan and libFuzzer the sanitizer build uses
#   postgresql_pkg   the PostgreSQL server package (scripts/pg-cluster finds any version)
#   browser_pkgs     Chromium and its WebDriver for the browser test, empty where the release
#                    ships them only as a snap (Ubuntu), which does not run in a container
# Package names are chosen by release, never by path: every library is found by CMake or
# pkg-config wherever the release puts it.
harness_detect_release() {
  local file=${HARNESS_OS_RELEASE:-/etc/os-release} ID="" VERSION_ID="" PRETTY_NAME=""
  # shellcheck disable=SC1090
  [ -r "$file" ] && . "$file"
  case "$ID:$VERSION_ID" in
    debian:12)
      release=debian-12 clang_version=16 postgresql_pkg=postgresql-15
      browser_pkgs="chromium chromium-driver" ;;
    debian:13)
      release=debian-13 clang_version=19 postgresql_pkg=postgresql-17
      browser_pkgs="chromium chromium-driver" ;;
    ubuntu:24.04)
      release=ubuntu-24.04 clang_version=16 postgresql_pkg=postgresql-16 browser_pkgs="" ;;
    *)
      # Anything else is tried with Debian 12's names; apt says which ones it lacks.
      release="other (${PRETTY_NAME:-unknown})" clang_version=16 postgresql_pkg=postgresql
      browser_pkgs="chromium chromium-driver" ;;
  esac
}

# The sanitizer build's compiler: the release's clang if it is there, else the newest clang++-N
# on PATH (a machine set up by hand), else nothing.
harness_clang_cxx() {
  if command -v "clang++-$clang_version" >/dev/null; then
    echo "clang++-$clang_version"
    return
  fi
  compgen -c clang++- | grep -E '^clang\+\+-[0-9]+$' | sort -t- -k2 -n | tail -n 1
}
