#!/usr/bin/env bash
# System packages hierviz's set-up needs: graphviz (`dot`) and chromium (browser tests).
set -u
missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null; } || {
    echo "apt-get install ${missing[*]} failed" >&2; exit 1; }
else
  echo "hierviz needs ${missing[*]}, which are not installed and cannot be installed as this user. Run:" >&2
  echo "  sudo apt-get install -y ${missing[*]}      (Debian/Ubuntu)" >&2
  echo "  conda install -c conda-forge graphviz        (conda)" >&2
  echo "  brew install graphviz                         (macOS)" >&2
  echo "hierviz works without them, except drawing diagrams (graphviz) and the browser test (chromium)." >&2
fi
exit 0
