/** Text a database can hold alike on both stores: no NUL, no lone surrogate. */
export function clean (s: string): string {
  // eslint-disable-next-line no-control-regex -- NUL is what is removed
  return s.replace(/\u0000/g, '').toWellFormed()
}
