// How the widget reads a number out of a report it did not write itself (an edited, older or
// hand-made one): a JSON number, or a string that holds one; anything else (null, true, "",
// an object) is NaN, never the 0 or 1 that Number() would make of it.

/** A report's number: a number as it is, a numeric string parsed, anything else NaN. */
export const num = (v) => (typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : NaN);

/** The sum of `f` over `items`. */
export const sum = (items, f) => items.reduce((acc, item) => acc + f(item), 0);
