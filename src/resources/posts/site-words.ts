/**
 * The words the reading site's own paths begin with (`/page/2`, `/tag/…`, `/p/{token}`): no post
 * may have one as its slug, whether given (taken) or derived (numbered: `page-2`).
 */
export const SITE_WORDS: ReadonlySet<string> = new Set(['page', 'tag', 'author', 'search', 'p', 'assets', 'media'])

/** Whether `s` is one of the site's words, which no post may hold as its slug. */
export function isSiteWord (s: string): boolean {
  return SITE_WORDS.has(s)
}
