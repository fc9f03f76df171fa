# Sourced by scripts that read or compile against the debug build's Swift modules (check-api.sh, check-tutorial.sh):
# sets `bin` (the build directory) and `module_args` (search paths for our modules and the dependencies' C modules,
# for which SwiftPM writes module maps when they have none of their own).
bin=$(swift build --show-bin-path)
module_args=(-I "$bin/Modules" -I Sources/CSodium)
for map in "$bin"/*.build/module.modulemap; do module_args+=(-Xcc "-fmodule-map-file=$map"); done
while IFS= read -r include; do module_args+=(-I "$include"); done < <(
    find .build/checkouts -type d -path '*/include' -not -path '*/Benchmarks/*' -not -path '*/Tests/*' | sort)
