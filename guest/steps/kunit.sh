# SPDX-License-Identifier: GPL-2.0
# The KUnit suites built into this kernel (configs/kunit.config) ran at boot,
# before /init. One result per case, read back from each suite's debugfs
# log (case lines sit one level in; deeper ones are a case's parameters,
# summed up by the case's own line). TB_KUNIT_MUST_RUN names cases
# (suite.case) that must have passed, not been skipped: a comparison whose
# reference code silently stopped building must not pass as a skip.
# TB_KUNIT_RANDOM_OPS: the count generic_pt's random test must have been
# given on the command line (an unknown parameter is silently ignored).
. /steps/lib.sh
suites=0
for d in /sys/kernel/debug/kunit/*; do
	[ -e "$d/results" ] || continue
	suites=$((suites + 1))
	suite=$(basename "$d")
	sed -nE 's/^    (not ok|ok) [0-9]+ ([^ #]+)( # SKIP(.*))?.*$/\1|\2|\3|\4/p' \
		"$d/results" > /tmp/kunit-cases
	while IFS='|' read -r verdict name skip reason; do
		if [ "$verdict" != ok ]; then
			fail "$suite.$name"
		elif [ -n "$skip" ]; then
			ok "$suite.$name # SKIP$reason"
		else
			ok "$suite.$name"
		fi
		echo "$suite.$name $verdict${skip:+ skip}" >> /tmp/kunit-seen
	done < /tmp/kunit-cases
done
diag "suites: $suites"
check "KUnit suites ran at boot" [ "$suites" -gt 0 ]
if [ -n "$TB_KUNIT_RANDOM_OPS" ]; then
	check "generic_pt's random test took $TB_KUNIT_RANDOM_OPS operations a format" \
		[ "$(cat /sys/module/gpt_kunit/parameters/random_ops)" = "$TB_KUNIT_RANDOM_OPS" ]
fi
for c in $TB_KUNIT_MUST_RUN; do
	check "$c ran and passed (not skipped)" grep -qx "$c ok" /tmp/kunit-seen
done
plan
