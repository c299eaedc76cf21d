#!/usr/bin/env bash
# The system packages `make test` needs beyond Python: a Chromium for the browser test
# (tests/browser) and a CJK font, so that Chinese text in its screenshots is not boxes.
#
# Present: returns at once. Missing on Debian/Ubuntu: installs them with apt-get, as root or
# through sudo without a password. Otherwise: stops with one line that says what to install.
# ATTNLIB_CHROMIUM=/path/to/chrome names another Chromium-based browser instead of Debian's.
set -euo pipefail

packages=()
if [ -n "${ATTNLIB_CHROMIUM:-}" ]; then
  [ -x "$ATTNLIB_CHROMIUM" ] || { echo "make test: ATTNLIB_CHROMIUM=$ATTNLIB_CHROMIUM is not an executable file" >&2; exit 1; }
elif ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  packages+=(chromium)
fi
if ! { command -v fc-list >/dev/null 2>&1 && [ -n "$(fc-list :lang=zh family 2>/dev/null)" ]; }; then
  packages+=(fonts-wqy-microhei)
fi
((${#packages[@]})) || exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "make test: install ${packages[*]} (Chromium and a CJK font) with your system's package manager, or set ATTNLIB_CHROMIUM to a Chromium/Chrome binary" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo)
else
  echo "make test: run 'sudo apt-get install -y --no-install-recommends ${packages[*]}' first (needs root)" >&2
  exit 1
fi
echo "make test: installing the system packages ${packages[*]} (once)"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "${packages[@]}" >/dev/null
