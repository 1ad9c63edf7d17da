import type { Generated } from 'kysely'
import type { Viewer } from '../../domain/principal.ts'
import type { StoreModule } from '../../store/module.ts'
import type { ListPage, ListQuery, WriteResult } from '../../store/store.ts'
import type { Timestamp } from '../../store/tables.ts'
import * as m0001 from './0001-content.ts'
import type { Post, PostSortKey, PostStatus, PostSummary, PostWriteInput } from './post.ts'
import { PostsRepository } from './posts-repository.ts'

export interface PostsTable {
  id: Generated<number>
  title: string
  content: string
  status: PostStatus
  author: string
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
}

/** Every slug a post holds: its current one and those it was renamed from (contract §10). */
export interface PostSlugsTable {
  slug: string
  post_id: number
}

/** A post's tags, one row each by case-folded key, so `?tag=` is an index lookup. */
export interface PostTagsTable {
  post_id: number
  tag_key: string
  name: string
}

export interface PostFilter {
  readonly status?: PostStatus
  /** Full-text search over title, content and tags; every word must match. */
  readonly q?: string
  /** Posts holding any of these tag keys (case-folded). */
  readonly tag?: readonly string[]
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
  /** The post if it exists and `viewer` may see it (published, own, or admin). */
  findById (id: number, viewer: Viewer): Promise<Post | null>
  /** Posts `viewer` may see; visibility is part of the query, so pages stay full. */
  list (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<Post>>
  /** The same page without the posts' content, for lists that do not show it (it is most of a row). */
  listSummaries (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<PostSummary>>
  /** The post whose current slug or alias `slug` is, if `viewer` may see it. */
  findBySlug (slug: string, viewer: Viewer): Promise<SlugLookup>
  /** Throws SlugTakenError when the slug given is another post's. */
  create (write: PostWriteInput, author: string, now: Date): Promise<Post>
  /**
   * Replaces the client-set fields when the row is still at `expectedRevision`:
   * the check and the write are one statement, so of two racing writers one gets `stale`.
   */
  replace (id: number, write: PostWriteInput, expectedRevision: number, now: Date): Promise<WriteResult<Post> | { readonly outcome: 'slug-taken' }>
  delete (id: number, expectedRevision: number): Promise<WriteResult<true>>
  /** Every tag on a post `viewer` may see, with how many such posts hold it. */
  tags (query: ListQuery<string, TagsQuery>, viewer: Viewer): Promise<ListPage<TagCount>>
}

declare module '../../store/tables.ts' { interface Database { posts: PostsTable, post_slugs: PostSlugsTable, post_tags: PostTagsTable } }
declare module '../../store/store.ts' { interface Repositories { readonly posts: PostStore } }

/**
 * Posts' first tables were made by the core's first migration (`0001-initial`, per database,
 * frozen), from before resources had folders; what posts added since is theirs.
 */
export const postsStore: StoreModule = {
  name: 'posts',
  migrations: { 'posts/0001-content': m0001.migration },
  repository: (db, dialect): PostStore => new PostsRepository(db, dialect),
}
