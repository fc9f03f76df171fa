# Reports libsodium calls whose result is dropped because they stand as a statement of their own (TEST-MATRIX S4):
# a call at the start of a line whose previous line cannot continue into it (it does not end with "(", ",", "=",
# an operator, "return" or "in"), unless the call is compared right away or returns nothing (sodium_memzero,
# randombytes_buf). Used by check-hygiene.sh.
FNR == 1 { prev = "" }
{
    line = $0
    if (match(line, /^[ \t]*(crypto_|sodium_|randombytes_)[A-Za-z0-9_]*\(/)) {
        name = line
        sub(/^[ \t]*/, "", name)
        sub(/\(.*/, "", name)
        if (name !~ /^(sodium_memzero|randombytes_buf|randombytes_buf_deterministic|sodium_increment|sodium_add)$/) {
            p = prev
            sub(/[ \t]+$/, "", p)
            if (p !~ /(\(|,|=|&&|\|\||return|\?|:|in)$/ && line !~ /\)[ \t]*(==|!=|>=|<=|<|>)/) {
                print FILENAME ":" FNR ": " line
            }
        }
    }
    if (line ~ /[^ \t]/) prev = line
}
