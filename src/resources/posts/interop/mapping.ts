import { isSlug, SLUG_MAX } from '../../../domain/slug.ts'
import type { MappingContext } from '../../../http/contract/resources.ts'
import { CONTENT_MAX, EXCERPT_MAX, TAG_MAX, TAGS_MAX, TITLE_MAX } from '../limits.ts'
import type { SourcePost } from './entries.ts'
import { paragraphs, toMarkdown } from './html.ts'
import type { ImportableItem } from './importable.ts'
import { clean } from './text.ts'

/** Dates a post may hold: four-digit years, as RFC 3339 writes them (and both databases store). */
const YEAR_MIN = 1000
const YEAR_MAX = 9999
const UNTITLED = 'Untitled'

const STATUSES: Readonly<Record<string, ImportableItem['status']>> = {
  publish: 'published', // WordPress
  published: 'published', // Ghost
  future: 'scheduled',
  scheduled: 'scheduled',
  draft: 'draft',
  pending: 'draft',
  private: 'draft',
  // This service's own WXR keeps an archived post's status beside WordPress's `private`.
  archived: 'archived',
}
/** Source states that are no post to show: a post in them is skipped. */
const NOT_POSTS = new Set(['trash', 'auto-draft', 'inherit'])

/** Code points, not UTF-16 units: a cut never splits a character. */
function chars (s: string): number {
  return s.length > 4 * 100_000 ? s.length : Array.from(s).length
}

function cut (s: string, max: number): string {
  return Array.from(s).slice(0, max).join('')
}

function decoded (s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/** A slug this service can take as it is, from a source's slug or address segment; else null. */
function asSlug (raw: string): string | null {
  const s = decoded(raw).trim().toLowerCase()
  return isSlug(s) ? s : null
}

/** The last segment of a permalink's path (`https://blog.example/2020/01/hello/` → `hello`). */
function lastSegment (url: string): string | null {
  let path: string
  try {
    path = new URL(url, 'http://source.invalid').pathname
  } catch {
    return null
  }
  return path.split('/').filter(s => s !== '').at(-1) ?? null
}

function validDate (date: Date | null): Date | null {
  if (date === null || Number.isNaN(date.getTime())) return null
  const year = date.getUTCFullYear()
  return year >= YEAR_MIN && year <= YEAR_MAX ? date : null
}

/** A post mapped, with what the rules changed on the way (and its tags, for the report); or the reason it cannot be imported. */
export type Mapped =
  | { readonly item: Omit<ImportableItem, 'existing'>, readonly tags: readonly string[], readonly warnings: readonly string[] }
  | { readonly skipped: string, readonly warnings: readonly string[] }

/**
 * A source's post in this service's terms: title, content (HTML → Markdown), status, dates, author,
 * tags, excerpt, slug and old addresses. What breaks a limit is mended where a reader loses nothing
 * that matters (a title or excerpt cut, tags past 20 left out) and said in a warning; what cannot be
 * mended (no content at all, content past 100 000 characters, a post in the trash) skips the post.
 */
export function mapPost (post: SourcePost, ctx: MappingContext): Mapped {
  const warnings: string[] = []
  if (post.oversize) return { skipped: 'A field of it is longer than the 4 MiB a field may have; it was not read.', warnings }
  const word = post.status.trim().toLowerCase()
  if (NOT_POSTS.has(word)) return { skipped: `Its status is "${word}": it is no post to show.`, warnings }

  let title = clean(post.title).replace(/\s+/g, ' ').trim()
  if (title === '') {
    title = UNTITLED
    warnings.push(`It has no title; it was given "${UNTITLED}".`)
  } else if (chars(title) > TITLE_MAX) {
    title = cut(title, TITLE_MAX).trim()
    warnings.push(`Its title is longer than ${TITLE_MAX} characters; it was cut.`)
  }

  let content: string
  if (post.markdown !== null) content = clean(post.markdown)
  else if (post.html !== null) content = toMarkdown(clean(ctx.source === 'wordpress' ? paragraphs(post.html) : post.html))
  else return { skipped: 'It has neither HTML nor Markdown content (only an editor\'s document format).', warnings }
  if (chars(content) > CONTENT_MAX) return { skipped: `Its content is longer than ${CONTENT_MAX} characters once converted to Markdown.`, warnings }

  let status = STATUSES[word]
  if (status === undefined) {
    status = 'draft'
    warnings.push(`Its status "${word}" is not one this service knows; it was imported as a draft.`)
  }
  const date = validDate(post.date)
  if (date === null && post.dateText !== null) warnings.push(`Its date "${post.dateText}" is not one this service can hold (years ${YEAR_MIN}–${YEAR_MAX}); the time of the import was used.`)
  let publishAt: string | null = null
  if (status === 'scheduled') {
    if (date === null) {
      status = 'draft'
      warnings.push('It is scheduled without a date it could be published at; it was imported as a draft.')
    } else if (date.getTime() <= ctx.now.getTime()) {
      status = 'published'
      warnings.push(`It was scheduled for ${date.toISOString()}, which has passed; it was imported as published then.`)
    } else {
      publishAt = date.toISOString()
    }
  }

  const tags: string[] = []
  const keys = new Set<string>()
  for (const raw of post.tags) {
    const tag = clean(raw).replace(/\s+/g, ' ').trim()
    if (tag === '') continue
    if (chars(tag) > TAG_MAX) {
      warnings.push(`Its tag "${cut(tag, 60)}…" is longer than ${TAG_MAX} characters; it was left out.`)
      continue
    }
    if (keys.has(tag.toLowerCase())) continue
    keys.add(tag.toLowerCase())
    tags.push(tag)
  }
  if (tags.length > TAGS_MAX) warnings.push(`It has ${tags.length} tags and categories; the first ${TAGS_MAX} were kept.`)

  let excerpt: string | null = post.excerpt === null ? null : clean(post.excerpt).replace(/<[^>]*>/g, '').replace(/\s+/g, ' ').trim()
  if (excerpt === '') excerpt = null
  if (excerpt !== null && chars(excerpt) > EXCERPT_MAX) {
    excerpt = `${cut(excerpt, EXCERPT_MAX - 1).trimEnd()}…`
    warnings.push(`Its excerpt is longer than ${EXCERPT_MAX} characters; it was cut.`)
  }

  const rawSlug = post.slug === null ? '' : decoded(clean(post.slug)).trim()
  if (chars(rawSlug) > SLUG_MAX) warnings.push(`Its slug is longer than ${SLUG_MAX} characters; it was cut.`)
  const aliases = [post.permalink === null ? null : lastSegment(post.permalink), ...post.oldSlugs]
    .flatMap(s => s === null ? [] : [asSlug(s)]).filter((s): s is string => s !== null)

  return {
    item: {
      title,
      content,
      status,
      publishAt,
      // An archived post (this service's own WXR) keeps the time it was first published.
      publishedAt: (status === 'published' || status === 'archived') && date !== null ? date.toISOString() : null,
      author: clean(post.author ?? '').trim() || ctx.owner,
      tags: tags.slice(0, TAGS_MAX),
      excerpt,
      slug: rawSlug === '' ? null : rawSlug,
      aliases,
      ...(post.featureImageId === undefined ? {} : { featureImage: post.featureImageId }),
    },
    tags: tags.slice(0, TAGS_MAX),
    warnings,
  }
}
