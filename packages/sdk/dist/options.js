// Small helpers for the options pipeline of the client and the worker:
// unknown option names are errors, with a "did you mean" when one is close.
export function rejectUnknownOptions(owner, options, known) {
    for (const key of Object.keys(options)) {
        if (known.includes(key))
            continue;
        const guess = closest(key, known);
        throw new TypeError(`${owner}: unknown option "${key}"${guess ? ` (did you mean "${guess}"?)` : ""}`);
    }
}
export function closest(word, candidates) {
    let best;
    let bestDistance = Infinity;
    for (const candidate of candidates) {
        const d = editDistance(word.toLowerCase(), candidate.toLowerCase());
        if (d < bestDistance) {
            best = candidate;
            bestDistance = d;
        }
    }
    return bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}
function editDistance(a, b) {
    let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
    for (let i = 1; i <= a.length; i++) {
        const current = [i];
        for (let j = 1; j <= b.length; j++) {
            const cost = a[i - 1] === b[j - 1] ? 0 : 1;
            current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost);
        }
        previous = current;
    }
    return previous[b.length];
}
export function requireInteger(owner, name, value, min, max) {
    if (!Number.isInteger(value) || value < min || value > max) {
        throw new RangeError(`${owner}: ${name} must be an integer in ${min}..${max}, got ${String(value)}`);
    }
    return value;
}
//# sourceMappingURL=options.js.map