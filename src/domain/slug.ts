import transliterate from '@sindresorhus/transliterate'

/** A slug is 1–100 lowercase ASCII letters and digits in runs joined by single hyphens. */
export const SLUG_MAX = 100
export const SLUG_PATTERN = '^[a-z0-9]+(-[a-z0-9]+)*$'
const SLUG = new RegExp(SLUG_PATTERN)

/** The slug a title gives when nothing is left of it (`日本語`, `!!!`). */
export const FALLBACK_SLUG = 'post'

/**
 * The words the reading site's own paths begin with (`/page/2`, `/tag/…`, `/p/{token}`): no post
 * may have one as its slug, whether given (taken) or derived (numbered: `page-2`).
 */
export const SITE_WORDS: ReadonlySet<string> = new Set(['page', 'tag', 'author', 'search', 'p', 'assets', 'media'])

/** Whether `s` is one of the site's words, which no post may hold as its slug. */
export function isSiteWord (s: string): boolean {
  return SITE_WORDS.has(s)
}

export function isSlug (s: string): boolean {
  return s.length >= 1 && s.length <= SLUG_MAX && SLUG.test(s)
}

/** `s` cut to at most `max` characters, without a hyphen left at its end. */
function cut (s: string, max: number): string {
  return s.length <= max ? s : s.slice(0, max).replace(/-+$/, '')
}

/**
 * The slug derived from a title: Unicode folded to ASCII by a transliteration
 * library (`Crème brûlée!` → `creme-brulee`), every run of other characters one `-`, no `-` at
 * either end, at most 100 characters; `post` when nothing is left.
 */
export function deriveSlug (title: string): string {
  const ascii = transliterate(title).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '')
  return cut(ascii, SLUG_MAX) || FALLBACK_SLUG
}

/**
 * The `n`-th candidate for a derived slug (1: the slug itself, then `-2`, `-3` …), the base cut so
 * that the whole stays within 100 characters.
 */
export function slugCandidate (base: string, n: number): string {
  if (n <= 1) return base
  const suffix = `-${n}`
  return `${cut(base, SLUG_MAX - suffix.length) || FALLBACK_SLUG}${suffix}`
}

/**
 * The first free candidate of `base` given the slugs already taken that start with it: what a
 * create picks before it claims the slug (the claim, a unique index, settles any race).
 */
export function firstFreeSlug (base: string, taken: ReadonlySet<string>, from = 1): { slug: string, n: number } {
  for (let n = from; ; n++) {
    const slug = slugCandidate(base, n)
    if (!taken.has(slug)) return { slug, n }
  }
}

/**
 * What a numbered candidate (`slugCandidate(base, n)`, n ≥ 2) is made of: its number and the base
 * as cut for it. `cut` is true when that base may have been cut to fit (the candidate is at most two
 * characters short of 100: the cut and a trailing hyphen dropped), so any base starting with
 * `prefix` may have made it; otherwise only `prefix` itself did. Null for a slug no candidate has.
 */
export function candidateNumber (slug: string): { prefix: string, n: number, cut: boolean } | null {
  const m = /^(.+)-([1-9][0-9]*)$/.exec(slug)
  if (m === null) return null
  const n = Number(m[2])
  if (n < 2 || !Number.isSafeInteger(n)) return null
  return { prefix: m[1]!, n, cut: slug.length >= SLUG_MAX - 1 }
}
