/**
 * `published_at` is null until a post first becomes `published`, then the moment it
 * did, kept through later edits, unpublishing and republishing. Every route that sets a status (and
 * the scheduled switch, which passes its `publish_at` as `now`) asks this one function.
 */
export function publishedAtAfter (current: string | null, nextStatus: string, now: Date): string | null {
  if (current !== null) return current
  return nextStatus === 'published' ? now.toISOString() : null
}
