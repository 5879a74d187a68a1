# Sourced by tests/run.sh and tests/all.sh: keep the running totals of
# "N passed, N failed" lines.
passed=0
failed=0

# count FILE: add the file's last "N passed, N failed" line to the totals;
# a file without one counts as one failure (a crash before the summary).
count() {
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
	if [ -z "$line" ]; then
		failed=$((failed + 1))
		return 1
	fi
	p=${line%% passed*}
	f=${line#*, }
	f=${f%% failed*}
	passed=$((passed + p))
	failed=$((failed + f))
}
