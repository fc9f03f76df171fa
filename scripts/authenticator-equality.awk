# TEST-MATRIX S1: `==` / `!=` on a MAC, tag, cookie, token, checksum, digest, hash or Merkle root in the library
# sources. Authenticators are compared with ConstantTime.equals; a comparison of a public value is marked on its
# line with `// hygiene: public value`. Lengths (`.count`) and optionals (`nil`) are not values.
{
    line = $0
    if (line ~ /^[ \t]*\/\//) next
    if (line ~ /hygiene: public value/) next
    code = line
    sub(/\/\/.*/, "", code)
    gsub(/"[^"]*"/, "\"\"", code)
    n = split(code, parts, /(==|!=)/)
    if (n < 2) next
    for (i = 1; i < n; i++) {
        left = parts[i]; right = parts[i + 1]
        sub(/[ ]*$/, "", left)
        sub(/.*[ (\[!&|,]/, "", left)
        sub(/^[ ]*/, "", right); sub(/[ )\],{&|?].*/, "", right)
        if (left == "nil" || right == "nil") continue
        # Sizes and positions are not values: `tag.count == tagLength`.
        if (tolower(left) ~ /(count|length|size|offset|index)$/ || tolower(right) ~ /(count|length|size|offset|index)$/) continue
        if (tolower(left) ~ /(mac|tag|cookie|token|checksum|digest|hash|root)[a-z0-9_]*$/ ||
            tolower(right) ~ /(mac|tag|cookie|token|checksum|digest|hash|root)[a-z0-9_]*$/) {
            print FILENAME ":" FNR ": " line
            next
        }
    }
}
