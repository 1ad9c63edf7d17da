import { fieldError, validationFailed } from '../errors.ts'

export const POST_STATUSES = ['draft', 'published', 'archived', 'scheduled'] as const
export type PostStatus = typeof POST_STATUSES[number]

export const TITLE_MAX = 200
export const CONTENT_MAX = 100_000

/** A post as the store keeps it. `revision` grows by one on every change and feeds the ETag. */
export interface Post {
  id: number
  title: string
  content: string
  status: PostStatus
  /** When a `scheduled` post is to be published; null for every other status. */
  publishAt: string | null
  author: string
  createdAt: string
  updatedAt: string
  revision: number
}

/** A post without its content: what a list reads when its items do not show the content. */
export type PostSummary = Omit<Post, 'content'>

/** What a client may set: the whole of it on create and replace. */
export interface PostInput {
  title: string
  content: string
  status: PostStatus
  /** ISO 8601 UTC, millisecond precision; absent or null unless the status is `scheduled`. */
  publishAt?: string | null
}

/** The sortable keys of a post list, each backed by an index in both stores. */
export const POST_SORT_KEYS = ['id', 'title', 'created_at', 'updated_at'] as const
export type PostSortKey = typeof POST_SORT_KEYS[number]

/**
 * The title is stored trimmed; its length rule (1–200 after trimming) is checked by the
 * request schema's `trimmedLength` keyword so that it joins the other violations in one 422.
 */
export function normalisePostInput (input: { title: string, content: string, status?: PostStatus | undefined, publish_at?: string | null | undefined }): PostInput {
  const publishAt = input.publish_at == null ? null : Date.parse(input.publish_at)
  // A leap second (…T23:59:60Z) is RFC 3339 but no instant JavaScript can hold.
  if (Number.isNaN(publishAt)) throw validationFailed([fieldError('publish_at', 'INVALID_FORMAT', 'publish_at is not a moment that exists (a leap second?).')])
  return { title: input.title.trim(), content: input.content, status: input.status ?? 'published', publishAt: publishAt === null ? null : new Date(publishAt).toISOString() }
}
