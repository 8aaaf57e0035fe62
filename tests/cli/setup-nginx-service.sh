#!/bin/sh
# scripts/setup.sh installs nginx (a test dependency) without leaving the system service started or enabled
# (issue 28, setup side effect). apt-get, dpkg-query, systemctl and sudo are stand-ins on PATH that record what
# setup.sh asked; the policy-rc.d goes to a temporary path (BASALT_SETUP_POLICY_RC).
#   setup-nginx-service.sh SETUP_SH WORK_DIR
set -u
setup=$1 work=$2
rm -rf "$work"
mkdir -p "$work/bin"
log="$work/log"
failed=0
fail() {
    echo "FAILED: $1"
    echo "--- what the stand-ins saw:"
    cat "$log" 2>/dev/null
    failed=1
}

# dpkg-query: every package installed except those listed in $MISSING.
cat >"$work/bin/dpkg-query" <<'STUB'
#!/bin/sh
for a in "$@"; do pkg=$a; done  # the package is the last argument
for p in $MISSING; do [ "$p" = "$pkg" ] && exit 1; done
printf 'install ok installed'
STUB
# apt-get: records the install and what the policy (if any) answers for nginx and for another service then.
cat >"$work/bin/apt-get" <<'STUB'
#!/bin/sh
[ "$1" = update ] && exit 0
echo "apt-get $*" >>"$LOG"
if [ -x "$POLICY" ]; then
    "$POLICY" nginx start; echo "policy nginx start: $?" >>"$LOG"
    "$POLICY" nginx.service start; echo "policy nginx.service start: $?" >>"$LOG"
    "$POLICY" ssh restart; echo "policy ssh restart: $?" >>"$LOG"
else
    echo "policy: none" >>"$LOG"
fi
STUB
# shellcheck disable=SC2016  # the stand-in expands these when it runs
printf '#!/bin/sh\necho "systemctl $*" >>"$LOG"\n' >"$work/bin/systemctl"
printf '#!/bin/sh\nexec "$@"\n' >"$work/bin/sudo"
printf '#!/bin/sh\nexit 0\n' >"$work/bin/node"
cp "$work/bin/node" "$work/bin/npm"
chmod +x "$work/bin/"*
export LOG="$log" POLICY="$work/policy-rc.d" BASALT_SETUP_POLICY_RC="$work/policy-rc.d" PATH="$work/bin:$PATH"

# 1. nginx missing: installed under a policy that forbids nginx's service actions only, then disabled.
: >"$log"
MISSING="nginx" bash "$setup" --deps-only >"$work/out1" 2>&1 || fail "setup.sh exited $?: $(cat "$work/out1")"
grep -q "^apt-get install .*nginx" "$log" || fail "nginx was not installed"
grep -q "^policy nginx start: 101$" "$log" || fail "the install could start nginx (no policy forbidding it)"
grep -q "^policy nginx.service start: 101$" "$log" || fail "the install could start nginx.service"
grep -q "^policy ssh restart: 0$" "$log" || fail "the policy forbids other services too"
[ ! -e "$POLICY" ] || fail "the policy-rc.d was left in place after the install"
grep -q "^systemctl disable .*nginx.service" "$log" || fail "the nginx service was not disabled after the install"

# 2. nginx installed before: its service is not touched, no policy is written.
: >"$log"
MISSING="ccache" bash "$setup" --deps-only >"$work/out2" 2>&1 || fail "setup.sh exited $?: $(cat "$work/out2")"
grep -q "^apt-get install .*ccache" "$log" || fail "ccache was not installed"
grep -q "^policy: none$" "$log" || fail "a policy was written though nginx was installed already"
if grep -q "^systemctl" "$log"; then fail "systemctl was called though nginx was installed already"; fi

# 3. A policy-rc.d that exists already is the machine's: left as it is, not removed.
: >"$log"
printf '#!/bin/sh\n# the machine'"'"'s own\nexit 101\n' >"$POLICY"
chmod +x "$POLICY"
cp "$POLICY" "$work/policy-before"
MISSING="nginx" bash "$setup" --deps-only >"$work/out3" 2>&1 || fail "setup.sh exited $?: $(cat "$work/out3")"
cmp -s "$POLICY" "$work/policy-before" || fail "an existing policy-rc.d was changed or removed"
grep -q "^policy ssh restart: 101$" "$log" || fail "the existing policy was not the one in force"

[ "$failed" -eq 0 ] && echo "ok: nginx installed without starting or enabling its service"
exit "$failed"
