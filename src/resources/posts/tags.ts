/** The form tags are compared and looked up in: case-insensitive, locale-independent. */
export function tagKey (tag: string): string {
  return tag.trim().toLowerCase()
}

/**
 * A post's tags as stored: trimmed, and of tags equal but for case the first spelling kept,
 * in the order given. The lengths were checked by the request schema.
 */
export function normaliseTags (tags: readonly string[]): string[] {
  const seen = new Set<string>()
  const out: string[] = []
  for (const raw of tags) {
    const tag = raw.trim()
    const key = tagKey(tag)
    if (seen.has(key)) continue
    seen.add(key)
    out.push(tag)
  }
  return out
}

/** A `?tag=` list: the distinct keys it names (empty members ignored). */
export function parseTagFilter (raw: string): string[] {
  return [...new Set(raw.split(',').map(tagKey).filter(k => k !== ''))]
}
