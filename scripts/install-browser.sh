#!/bin/sh
# The /docs test drives Debian's Chromium; install it when it is missing (needs root or sudo).
set -e
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
