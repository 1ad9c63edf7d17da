import type { Expression, ExpressionBuilder, Kysely, SqlBool } from 'kysely'
import type { Post, PostInput, PostSortKey, PostStatus } from '../../domain/post.ts'
import { isAdmin, type Viewer } from '../../domain/principal.ts'
import { readPage } from '../read-page.ts'
import type { ListPage, ListQuery, PostFilter, PostStore, WriteResult } from '../store.ts'
import { type Database, type DialectParts, iso, type Timestamp } from '../tables.ts'

type PostRow = { id: number | string, title: string, content: string, status: PostStatus, author: string, created_at: Timestamp, updated_at: Timestamp, revision: number | string }

function toPost (row: PostRow): Post {
  return {
    id: Number(row.id),
    title: row.title,
    content: row.content,
    status: row.status,
    author: row.author,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    revision: Number(row.revision),
  }
}

const SORT_COLUMNS = { id: 'id', title: 'title', created_at: 'created_at', updated_at: 'updated_at' } as const

/** The posts table, on the store's connection or on a unit of work's transaction. */
export class PostsRepository implements PostStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  private visible (eb: ExpressionBuilder<Database, 'posts'>, viewer: Viewer): Expression<SqlBool> | null {
    if (isAdmin(viewer)) return null
    if (viewer === null) return eb('posts.status', '=', 'published')
    return eb.or([eb('posts.status', '=', 'published'), eb('posts.author', '=', viewer.subject)])
  }

  private filtered (filter: PostFilter, viewer: Viewer) {
    return this.db.selectFrom('posts').where(eb => {
      const conds: Expression<SqlBool>[] = []
      const vis = this.visible(eb, viewer)
      if (vis) conds.push(vis)
      if (filter.status !== undefined) conds.push(eb('posts.status', '=', filter.status))
      if (filter.q !== undefined) conds.push(this.dialect.textSearch(eb, filter.q))
      return eb.and(conds)
    })
  }

  async findById (id: number, viewer: Viewer): Promise<Post | null> {
    const row = await this.db.selectFrom('posts').selectAll()
      .where('id', '=', id)
      .where(eb => this.visible(eb, viewer) ?? eb.lit(true))
      .executeTakeFirst()
    return row ? toPost(row) : null
  }

  async list (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<Post>> {
    const page = await readPage(
      this.filtered(query.filter, viewer).selectAll(),
      query,
      key => `posts.${SORT_COLUMNS[key as PostSortKey]}`,
      async () => {
        const r = await this.filtered(query.filter, viewer).select(eb => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()
        return Number(r.n)
      }
    )
    return { ...page, items: page.items.map(toPost) }
  }

  async create (input: PostInput, author: string, now: Date): Promise<Post> {
    const ts = this.dialect.timestamp(now)
    const row = await this.db.insertInto('posts')
      .values({ title: input.title, content: input.content, status: input.status, author, created_at: ts, updated_at: ts, revision: 1 })
      .returningAll()
      .executeTakeFirstOrThrow()
    return toPost(row)
  }

  async replace (id: number, input: PostInput, expectedRevision: number, now: Date): Promise<WriteResult<Post>> {
    const row = await this.db.updateTable('posts')
      .set(eb => ({
        title: input.title,
        content: input.content,
        status: input.status,
        updated_at: this.dialect.timestamp(now),
        revision: eb('revision', '+', 1),
      }))
      .where('id', '=', id)
      .where('revision', '=', expectedRevision)
      .returningAll()
      .executeTakeFirst()
    if (row) return { outcome: 'done', value: toPost(row) }
    return await this.missingOrStale(id)
  }

  async delete (id: number, expectedRevision: number): Promise<WriteResult<true>> {
    const r = await this.db.deleteFrom('posts').where('id', '=', id).where('revision', '=', expectedRevision).executeTakeFirst()
    if (Number(r.numDeletedRows) === 1) return { outcome: 'done', value: true }
    return await this.missingOrStale(id)
  }

  private async missingOrStale (id: number): Promise<{ outcome: 'missing' } | { outcome: 'stale' }> {
    const exists = await this.db.selectFrom('posts').select('id').where('id', '=', id).executeTakeFirst()
    return exists ? { outcome: 'stale' } : { outcome: 'missing' }
  }
}
