import type { Generated } from 'kysely'
import type { Viewer } from '../../domain/principal.ts'
import type { Byline } from '../../http/contract/resources.ts'
import type { ListPage, ListQuery, WriteResult } from '../../store/store.ts'
import type { Timestamp } from '../../store/tables.ts'
import type { NewPostWrite, Post, PostSortKey, PostStatus, PostSummary, PostWrite } from './post.ts'
import type { Revision, RevisionSummary } from './revisions/revision.ts'
import type { PreviewLinksTable, PreviewLinkStore } from './preview-links/preview-links-repository.ts'

export interface PostsTable {
  id: Generated<number>
  title: string
  content: string
  status: PostStatus
  publish_at: Timestamp | null
  author: string
  /** The listed authors' slugs, a JSON array (posts/0009-authors). */
  authors: Generated<string>
  created_at: Timestamp
  updated_at: Timestamp
  revision: number
  /** Null only between a create's insert and its slug's claim, inside one transaction. */
  slug: string | null
  /** The tags as given, a JSON array. */
  tags: Generated<string>
  excerpt: Generated<string>
  excerpt_derived: Generated<number>
  content_html: Generated<string>
  published_at: Timestamp | null
  meta_title: string | null
  meta_description: string | null
  canonical_url: string | null
  /** The feature image's facts as JSON, and its id (what a deletion of the image asks about). */
  feature_image: Generated<string | null>
  feature_image_id: Generated<string | null>
}

/** Every slug a post holds: its current one and those it was renamed from. */
export interface PostSlugsTable {
  slug: string
  post_id: number
}

/**
 * Per derived slug found taken (posts/0006-slug-counters): its candidates numbered 2 to next_n − 1
 * are taken but for the numbers in post_slug_gaps (freed by deletions), so a create tries the least
 * gap, else `base-<next_n>`.
 */
export interface PostSlugCountersTable {
  base: string
  next_n: number
}

export interface PostSlugGapsTable {
  base: string
  n: number
}

/** SQLite: posts whose full-text entry is to be made again or removed (posts/0007-search-queue). */
export interface PostSearchQueueTable {
  post_id: number
}

/** A post's listed authors, one row each by place (0: the first), with the user's id and current slug. */
export interface PostAuthorsTable {
  post_id: number
  position: number
  user_id: string
  slug: string
}

/** A post's tags, one row each by case-folded key, so `?tag=` is an index lookup. */
export interface PostTagsTable {
  post_id: number
  tag_key: string
  name: string
  /** The post's created_at (posts/0003-tag-order), which never changes: a tag's posts in list order. */
  created_at: Timestamp | null
}

/** A post's values after one change; `number` is the post's revision that change made. */
export interface PostRevisionsTable {
  post_id: number
  number: number
  title: string
  content: string
  status: PostStatus
  slug: string
  /** A JSON array, as posts.tags. */
  tags: string
  excerpt: string
  excerpt_derived: number
  publish_at: Timestamp | null
  /** Who made the change: a principal's subject, or `system` for the scheduled switch. */
  editor: string
  created_at: Timestamp
  meta_title: string | null
  meta_description: string | null
  canonical_url: string | null
}

export interface PostFilter {
  readonly status?: PostStatus
  /** Full-text search over title, content and tags; every word must match. */
  readonly q?: string
  /** Posts holding any of these tag keys (case-folded). */
  readonly tag?: readonly string[]
  /** A post's author (a principal's name), or one of its listed authors (a user's slug). */
  readonly author?: string
  /** The current slug (not an alias). */
  readonly slug?: string
  /** RFC 3339 bounds, exclusive, on `published_at`. */
  readonly published_after?: string
  readonly published_before?: string
  /** RFC 3339, inclusive, on `updated_at`. */
  readonly updated_since?: string
}

/** What a slug names: a post (its current slug), the current slug of the post it is an alias of, or nothing visible. */
export type SlugLookup = { readonly post: Post } | { readonly movedTo: string } | null

/** A tag with the number of posts holding it; `id` is its case-folded key (the list's tie-breaker). */
export interface TagCount {
  readonly id: string
  readonly name: string
  readonly count: number
}

export interface TagsQuery {
  /** A case-insensitive prefix of the name. */
  readonly q?: string
}

export interface PostStore {
  /** Whether any post holds image `id` as its feature image. */
  holdsImage (id: string): Promise<boolean>
  /** The post if it exists and `viewer` may see it (published, own, or admin). */
  findById (id: number, viewer: Viewer): Promise<Post | null>
  /** Posts `viewer` may see; visibility is part of the query, so pages stay full. */
  list (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<Post>>
  /** The same page without the posts' content, for lists that do not show it (it is most of a row). */
  listSummaries (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<PostSummary>>
  /** The post whose current slug or alias `slug` is, if `viewer` may see it. */
  findBySlug (slug: string, viewer: Viewer): Promise<SlugLookup>
  /**
   * Stores `write` as it is (the rules of posts decided it: post-write.ts); of its slug, claims the
   * given one, or the first free of a derived base's `base`, `base-2` …. Throws SlugTakenError when
   * the slug given is another post's.
   */
  create (write: NewPostWrite, author: string, now: Date): Promise<Post>
  /**
   * Stores `write` over the post, as it is, when the row is still at `expectedRevision`:
   * the check and the write are one statement, so of two racing writers one gets `stale`.
   */
  replace (id: number, write: PostWrite, expectedRevision: number, now: Date): Promise<WriteResult<Post> | { readonly outcome: 'slug-taken' }>
  delete (id: number, expectedRevision: number): Promise<WriteResult<true>>
  /** Every tag on a post `viewer` may see, with how many such posts hold it. */
  tags (query: ListQuery<string, TagsQuery>, viewer: Viewer): Promise<ListPage<TagCount>>
  /**
   * The scheduled switch: a post still `scheduled` at `expectedRevision` becomes
   * `published` with `publish_at` cleared and `published_at` as given, in one compare-and-set, so
   * of several instances racing (or an edit racing the switch) one wins and the others get `stale`.
   */
  publishScheduled (id: number, expectedRevision: number, publishedAt: string | null, now: Date): Promise<WriteResult<Post>>
  /** Up to `limit` scheduled posts whose `publish_at` is not after `now`, earliest first. */
  due (now: Date, limit: number): Promise<DuePost[]>
  /** The earliest `publish_at` of any scheduled post, or null when none is scheduled. */
  nextDue (): Promise<Date | null>
  /** Up to `limit` published posts with ids above `afterId`, in id order: a sitemap's keyset page. */
  published (afterId: number, limit: number): Promise<PublishedPost[]>
  /**
   * How many posts are published, the newest `updated_at` among them (null when none is) and the
   * sum of their ids: together they change with any change of which posts are published or of one.
   */
  publishedStats (): Promise<PublishedStats>
  /** The id of the published post `offset` places from the first in id order (0: the first), or null. */
  publishedIdAt (offset: number): Promise<number | null>
  /**
   * Brings the full-text index up to date for up to `limit` of the posts written since they were
   * last indexed (SQLite, where writes only queue their post; on PostgreSQL each write keeps the
   * index itself and this does nothing). Resolves with how many it took: fewer than `limit`, the
   * queue is empty. Run it in a unit of work, so that a post and its queue entry change together.
   */
  indexSearch (limit: number): Promise<number>
  /** How many posts wait for the full-text index (0 on PostgreSQL). */
  searchBacklog (): Promise<number>
  /** Whether any post lists user `userId` among its authors. */
  authorHolds (userId: string): Promise<boolean>
  /** `from`'s place in every post's authors goes to `to` (dropped where `to` is listed already). */
  reassignAuthor (from: Byline, to: Byline): Promise<void>
  /** Every post listing `user` names them by their current slug. */
  renameAuthor (user: Byline): Promise<void>
  /** How many published posts list each user (of `userIds`, or all) among their authors, by user id. */
  publishedAuthorCounts (userIds?: readonly string[]): Promise<Map<string, number>>
}

export interface PublishedStats {
  readonly count: number
  readonly newest: string | null
  /** Decimal: a sum of ids may pass 2^53. */
  readonly idSum: string
}

/** What a sitemap lists of a published post. */
export interface PublishedPost {
  readonly id: number
  readonly slug: string
  readonly updatedAt: string
  /** The feature image's path (its `url`), or null. */
  readonly image: string | null
}

/** A scheduled post whose time has come, as the switch needs it. */
export interface DuePost {
  readonly id: number
  readonly revision: number
  readonly publishAt: string
  readonly publishedAt: string | null
}

/** A post's history: one revision per change, numbered by the post's revision, kept newest `keep`. */
export interface RevisionStore {
  /** Records `post` as it is after a change by `editor`, and drops all but the newest `keep` revisions. */
  record (post: Post, editor: string, now: Date, keep: number): Promise<void>
  find (postId: number, number: number): Promise<Revision | null>
  /** Newest first unless `query.sort` says otherwise; sorted by `number`. */
  list (postId: number, query: ListQuery<'number', Record<string, never>>): Promise<ListPage<RevisionSummary>>
}

declare module '../../store/tables.ts' {
  interface Database {
    posts: PostsTable
    post_slugs: PostSlugsTable
    post_slug_counters: PostSlugCountersTable
    post_slug_gaps: PostSlugGapsTable
    post_tags: PostTagsTable
    post_authors: PostAuthorsTable
    post_search_queue: PostSearchQueueTable
    post_revisions: PostRevisionsTable
    post_preview_links: PreviewLinksTable
  }
}
declare module '../../store/store.ts' {
  interface Repositories { readonly posts: PostStore, readonly revisions: RevisionStore, readonly previewLinks: PreviewLinkStore }
}
