import { fieldError, validationFailed } from '../../errors.ts'
import type { Byline, ImageFacts } from '../../http/contract/resources.ts'
import { normaliseTags } from './tags.ts'

export const POST_STATUSES = ['draft', 'published', 'archived', 'scheduled'] as const
export type PostStatus = typeof POST_STATUSES[number]

/** What search engines and link previews show of a post; each null when not set. */
export interface PostSeo {
  metaTitle: string | null
  metaDescription: string | null
  /** An absolute http or https URL. */
  canonicalUrl: string | null
}

/** A post as the store keeps it. `revision` grows by one on every change and feeds the ETag. */
export interface Post extends PostSeo {
  id: number
  title: string
  content: string
  status: PostStatus
  /** When a `scheduled` post is to be published; null for every other status. */
  publishAt: string | null
  /** A principal's name: the first listed author's slug, or (no person wrote it) the credential's. */
  author: string
  /** The slugs of the users who wrote it, in order (the first the primary author); none for a post no person wrote. */
  authors: string[]
  createdAt: string
  updatedAt: string
  revision: number
  slug: string
  tags: string[]
  excerpt: string
  /** Whether the excerpt is the one derived from the content (made again when the content changes). */
  excerptDerived: boolean
  contentHtml: string
  publishedAt: string | null
  /** The cover image, as its facts were when the post was last written. */
  featureImage: ImageFacts | null
}

/** A post without its content and HTML: what a list reads when its items do not show them. */
export type PostSummary = Omit<Post, 'content' | 'contentHtml'>

/**
 * What a client may set: the whole of it on create and replace. `slug` absent: derived on create,
 * kept on replace; `excerpt` null: derived from the content.
 */
export interface PostInput extends Partial<PostSeo> {
  title: string
  content: string
  status: PostStatus
  slug?: string | undefined
  tags: string[]
  excerpt: string | null
  /** ISO 8601 UTC, millisecond precision; absent or null unless the status is `scheduled`. */
  publishAt?: string | null
  /** The id of the cover image, or null. */
  featureImage?: string | null
  /** The authors' slugs (1–10, distinct); absent: a create's default, a replace's current ones. */
  authors?: string[] | undefined
}

/** The slug a write claims: the one the client chose, or a base to number (`-2`, `-3` …) when it is taken. */
export type SlugWrite = { given: string } | { derived: string }

/**
 * What the store writes over a post: every value decided by the rules of posts (post-write.ts),
 * which the store keeps as given.
 */
export interface PostWrite extends PostSeo {
  title: string
  content: string
  status: PostStatus
  /** The slug to claim, or null to keep the post's. */
  slug: SlugWrite | null
  /** The tags to store, or null to keep those the post has. */
  tags: string[] | null
  /** The listed authors to store (one at least), or null to keep the post's. */
  authors: Byline[] | null
  excerpt: string
  excerptDerived: boolean
  contentHtml: string
  publishedAt: string | null
  /** Set only with status `scheduled`. */
  publishAt: string | null
  /** The cover image's facts (undefined: keep the post's). */
  featureImage?: ImageFacts | null
}

/** What the store writes for a new post: a write with nothing left to keep. */
export interface NewPostWrite extends PostWrite {
  slug: SlugWrite
  tags: string[]
  /** None for a post no person wrote. */
  authors: Byline[]
  featureImage: ImageFacts | null
}

/** The sortable keys of a post list, each backed by an index in both stores. */
export const POST_SORT_KEYS = ['id', 'title', 'created_at', 'updated_at', 'published_at', 'slug'] as const
export type PostSortKey = typeof POST_SORT_KEYS[number]

/**
 * The title is stored trimmed; its length rule (1–200 after trimming) is checked by the
 * request schema's `trimmedLength` keyword so that it joins the other violations in one 422.
 */
export function normalisePostInput (input: {
  title: string
  content: string
  status?: PostStatus | undefined
  slug?: string | undefined
  tags?: string[] | undefined
  excerpt?: string | null | undefined
  publish_at?: string | null | undefined
  meta_title?: string | null | undefined
  meta_description?: string | null | undefined
  canonical_url?: string | null | undefined
  feature_image?: string | { id: string } | null | undefined
  authors?: string[] | undefined
}): PostInput {
  const publishAt = input.publish_at == null ? null : Date.parse(input.publish_at)
  // A leap second (…T23:59:60Z) is RFC 3339 but no instant JavaScript can hold.
  if (Number.isNaN(publishAt)) throw validationFailed([fieldError('publish_at', 'INVALID_FORMAT', 'publish_at is not a moment that exists (a leap second?).')])
  return {
    title: input.title.trim(),
    content: input.content,
    status: input.status ?? 'published',
    slug: input.slug,
    tags: normaliseTags(input.tags ?? []),
    excerpt: input.excerpt ?? null,
    publishAt: publishAt === null ? null : new Date(publishAt).toISOString(),
    metaTitle: input.meta_title ?? null,
    metaDescription: input.meta_description ?? null,
    canonicalUrl: input.canonical_url ?? null,
    // A read's object is accepted too (a GET-modify-PUT round trip): its id is what counts.
    featureImage: input.feature_image == null ? null : typeof input.feature_image === 'string' ? input.feature_image : input.feature_image.id,
    authors: input.authors,
  }
}
