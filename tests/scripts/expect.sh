# expect.sh - sourced by the script tests that compare values: expect NAME WANT GOT prints
# "ok   - NAME" or "FAIL - NAME" with both values quoted, counting failures; expect_done
# prints the count and returns non-zero if any failed (the script's last command).
failures=0

expect() {
    if [ "$2" = "$3" ]; then
        echo "ok   - $1"
    else
        echo "FAIL - $1"
        echo "       expected: $(printf %q "$2")"
        echo "       got:      $(printf %q "$3")"
        failures=$((failures + 1))
    fi
}

expect_done() {
    echo "$failures failed"
    [ "$failures" -eq 0 ]
}
