/// The first index in `range` for which `isBelow` is false, assuming it is true for a prefix of the range and false
/// for the rest (a binary search for a sorted sequence's insertion point); `range.upperBound` if it holds throughout.
@inlinable
func lowerBound(in range: Range<Int>, where isBelow: (Int) -> Bool) -> Int {
    var low = range.lowerBound
    var high = range.upperBound
    while low < high {
        let middle = low + (high - low) / 2
        if isBelow(middle) {
            low = middle + 1
        } else {
            high = middle
        }
    }
    return low
}
