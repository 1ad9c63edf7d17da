import type { Generated } from 'kysely'
import type { Viewer } from '../../domain/principal.ts'
import type { StoreModule } from '../../store/module.ts'
import type { ListPage, ListQuery, WriteResult } from '../../store/store.ts'
import type { Timestamp } from '../../store/tables.ts'
import type { Post, PostInput, PostSortKey, PostStatus, PostSummary } from './post.ts'
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
}

export interface PostFilter {
  readonly status?: PostStatus
  /** Full-text search over title and content; every word must match. */
  readonly q?: string
}

export interface PostStore {
  /** The post if it exists and `viewer` may see it (published, own, or admin). */
  findById (id: number, viewer: Viewer): Promise<Post | null>
  /** Posts `viewer` may see; visibility is part of the query, so pages stay full. */
  list (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<Post>>
  /** The same page without the posts' content, for lists that do not show it (it is most of a row). */
  listSummaries (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<PostSummary>>
  create (input: PostInput, author: string, now: Date): Promise<Post>
  /**
   * Replaces the client-set fields when the row is still at `expectedRevision`:
   * the check and the write are one statement, so of two racing writers one gets `stale`.
   */
  replace (id: number, input: PostInput, expectedRevision: number, now: Date): Promise<WriteResult<Post>>
  delete (id: number, expectedRevision: number): Promise<WriteResult<true>>
}

declare module '../../store/tables.ts' { interface Database { posts: PostsTable } }
declare module '../../store/store.ts' { interface Repositories { readonly posts: PostStore } }

/** Posts' tables are made by the first migration (`0001-initial`, per database), which the core applies. */
export const postsStore: StoreModule = {
  name: 'posts',
  migrations: {},
  repository: (db, dialect): PostStore => new PostsRepository(db, dialect),
}
