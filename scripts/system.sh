#!/usr/bin/env bash
# Installs the Debian packages Practicum needs, when they are missing and we run as root.
#   scripts/system.sh base   what every command needs: venv support for Python, bubblewrap (the sandbox),
#                            util-linux and procps (prlimit, setpriv, kill: the sandbox's limits and uids)
#   scripts/system.sh test   base, plus Chromium (browser tests), Node.js (run.js's protocol tests),
#                            g++ (the compiled-vLLM test: torch.compile builds CPU kernels with it),
#                            PostgreSQL and Redis (the test suite)
set -euo pipefail

profile=${1:-test}
need=()
python3 -c "import ensurepip, venv" 2>/dev/null || need+=(python3-venv)
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v prlimit >/dev/null && command -v setpriv >/dev/null || need+=(util-linux)
[ -x /usr/bin/kill ] || [ -x /bin/kill ] || need+=(procps)
if [ "$profile" = test ]; then
    command -v chromium >/dev/null || need+=(chromium)
    command -v node >/dev/null || need+=(nodejs)  # the run page's protocol tests run run.js in node
    command -v g++ >/dev/null || command -v clang++ >/dev/null || need+=(g++)  # LMPolicyConfig.vllm_compiled
    command -v redis-server >/dev/null || need+=(redis-server)
    command -v pg_ctlcluster >/dev/null || need+=(postgresql)
fi
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "Missing Debian packages: ${need[*]}. Install them with: sudo apt-get install -y ${need[*]}" >&2
    # Not fatal: the sandbox falls back to rlimits without bwrap, and tests that need a missing piece skip
    # with this reason; a missing venv module fails at the next step with Python's own message.
    exit 0
fi
echo "Installing Debian packages: ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q "${need[@]}" >/dev/null; }
