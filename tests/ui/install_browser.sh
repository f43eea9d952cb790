#!/usr/bin/env bash
# Debian's Chromium and its ChromeDriver for tests/ui (the headless browser test). Idempotent.
set -euo pipefail
if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]]; then
    exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    SUDO="sudo"
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver
