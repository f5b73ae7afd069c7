#!/usr/bin/env bash
# Superseded by gpu/verify_adversary.sh (issue 25: every zoo candidate and every honest one); kept so
# that the command the README gives still runs. Same arguments: [REPO_ROOT], OUT=... in the environment.
exec bash "$(dirname "$0")/verify_adversary.sh" "$@"
