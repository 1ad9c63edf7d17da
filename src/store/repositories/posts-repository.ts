import type { Compilable, Expression, ExpressionBuilder, Kysely, SelectQueryBuilder, SqlBool } from 'kysely'
import type { Post, PostInput, PostSortKey, PostStatus, PostSummary } from '../../domain/post.ts'
import { isAdmin, type Viewer } from '../../domain/principal.ts'
import { arg, type PreparedQueries, preparedQueries } from '../prepared.ts'
import { pageOf, pageQuery, pageValues } from '../read-page.ts'
import type { ListPage, ListQuery, PostFilter, PostStore, WriteResult } from '../store.ts'
import { type Database, type DialectParts, iso, type Timestamp } from '../tables.ts'

type SummaryRow = { id: number | string, title: string, status: PostStatus, publish_at: Timestamp | null, author: string, created_at: Timestamp, updated_at: Timestamp, revision: number | string }
type PostRow = SummaryRow & { content: string }

function toSummary (row: SummaryRow): PostSummary {
  return {
    id: Number(row.id),
    title: row.title,
    status: row.status,
    publishAt: row.publish_at === null ? null : iso(row.publish_at),
    author: row.author,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    revision: Number(row.revision),
  }
}

function toPost (row: PostRow): Post {
  const post = toSummary(row) as Post
  post.content = row.content
  return post
}

const SORT_COLUMNS = { id: 'id', title: 'title', created_at: 'created_at', updated_at: 'updated_at' } as const

const SUMMARY_COLUMNS = ['id', 'title', 'status', 'publish_at', 'author', 'created_at', 'updated_at', 'revision'] as const

type ViewerKind = 'anonymous' | 'admin' | 'author'

function viewerKind (viewer: Viewer): ViewerKind {
  return viewer === null ? 'anonymous' : isAdmin(viewer) ? 'admin' : 'author'
}

/**
 * The posts table, on the store's connection or on a unit of work's transaction.
 *
 * Every query but full-text search is prepared: built and compiled by Kysely once per shape (the
 * viewer's kind, which filters, sort and paging are present) with `arg` placeholders, then run with
 * this request's values (src/store/prepared.ts). The values go, in order, into `args`.
 */
export class PostsRepository implements PostStore {
  private readonly prepared: PreparedQueries

  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {
    this.prepared = preparedQueries(dialect)
  }

  /**
   * Visibility for `viewer` (admins: none). `author` stands for the viewer's subject, which the
   * caller puts into the arguments where the returned condition needs it.
   */
  private visible (eb: ExpressionBuilder<Database, 'posts'>, kind: ViewerKind, author: () => string): Expression<SqlBool> | null {
    if (kind === 'admin') return null
    if (kind === 'anonymous') return eb('posts.status', '=', 'published')
    return eb.or([eb('posts.status', '=', 'published'), eb('posts.author', '=', author())])
  }

  /** The values a filtered query binds, in order: the viewer's subject (authors), the status filter. */
  private filterArgs (filter: PostFilter, viewer: Viewer): unknown[] {
    const args: unknown[] = []
    if (viewerKind(viewer) === 'author') args.push(viewer!.subject)
    if (filter.status !== undefined) args.push(filter.status)
    return args
  }

  /**
   * The posts `viewer` may see that pass `filter`; `value(i)` is what to bind for the i-th of
   * `filterArgs`: the value itself, or a placeholder. Full-text search is built by the dialect.
   */
  private filtered (filter: PostFilter, viewer: Viewer, value: (i: number) => unknown) {
    const kind = viewerKind(viewer)
    return this.db.selectFrom('posts').where(eb => {
      const conds: Expression<SqlBool>[] = []
      let i = 0
      const vis = this.visible(eb, kind, () => value(i++) as string)
      if (vis) conds.push(vis)
      if (filter.status !== undefined) conds.push(eb('posts.status', '=', value(i++) as PostStatus))
      if (filter.q !== undefined) conds.push(this.dialect.textSearch(eb, filter.q))
      return eb.and(conds)
    })
  }

  /**
   * Runs the query `build` makes with `args`: prepared once per `shape` (`build` gets placeholders),
   * or, with full-text search (whose SQL depends on the words), built with the values each time.
   */
  private async run<R> (shape: string, filter: PostFilter, args: readonly unknown[], build: (value: (i: number) => unknown) => Compilable<R> & { execute (): Promise<R[]> }): Promise<R[]> {
    if (filter.q !== undefined) return await build(i => args[i]).execute()
    return await this.prepared.get(shape, () => build(i => arg(i))).execute(this.db, args)
  }

  /** The shape of a list query: whatever decides its SQL text, not its values. */
  private listShape (what: string, query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): string {
    const sort = query.sort.map(t => `${t.key}:${t.direction}`).join(',')
    const position = query.after !== undefined ? `after${query.after.length}` : query.before !== undefined ? `before${query.before.length}` : ''
    return `${what}|${viewerKind(viewer)}|${query.filter.status !== undefined ? 'status' : ''}|${sort}|${position}|${query.offset ? 'offset' : ''}`
  }

  async findById (id: number, viewer: Viewer): Promise<Post | null> {
    const kind = viewerKind(viewer)
    const query = this.prepared.get(`find|${kind}`, () => this.db.selectFrom('posts').selectAll()
      .where('id', '=', arg<number>(0))
      .where(eb => this.visible(eb, kind, () => arg<string>(1)) ?? eb.lit(true)))
    const [row] = await query.execute(this.db, kind === 'author' ? [id, viewer!.subject] : [id])
    return row ? toPost(row) : null
  }

  async list (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<Post>> {
    return await this.page('page', query, viewer, filtered => filtered.selectAll(), toPost)
  }

  async listSummaries (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<PostSummary>> {
    return await this.page('summaries', query, viewer, filtered => filtered.select(SUMMARY_COLUMNS), toSummary)
  }

  /** One page of `select`'s columns (`what` names the selection in the query's shape), with its count when asked. */
  private async page<R, T> (
    what: string,
    query: ListQuery<PostSortKey, PostFilter>,
    viewer: Viewer,
    select: (filtered: ReturnType<PostsRepository['filtered']>) => SelectQueryBuilder<Database, 'posts', R>,
    map: (row: R) => T
  ): Promise<ListPage<T>> {
    const filterArgs = this.filterArgs(query.filter, viewer)
    const args = [...filterArgs, ...pageValues(query)]
    const [rows, total] = await Promise.all([
      this.run(this.listShape(what, query, viewer), query.filter, args, value =>
        pageQuery(select(this.filtered(query.filter, viewer, value)), query, key => `posts.${SORT_COLUMNS[key as PostSortKey]}`, i => value(filterArgs.length + i))),
      this.count(query, viewer),
    ])
    const page = pageOf(rows, query, total)
    return { ...page, items: page.items.map(map) }
  }

  /** Every post of the list, when the query asks for the count. */
  private async count (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<number | undefined> {
    if (!query.count) return undefined
    const shape = `count|${viewerKind(viewer)}|${query.filter.status !== undefined ? 'status' : ''}`
    const rows = await this.run(shape, query.filter, this.filterArgs(query.filter, viewer), value =>
      this.filtered(query.filter, viewer, value).select(eb => eb.fn.countAll<number | string>().as('n')))
    return Number(rows[0]?.n ?? 0)
  }

  async create (input: PostInput, author: string, now: Date): Promise<Post> {
    const ts = this.dialect.timestamp(now)
    const query = this.prepared.get('create', () => this.db.insertInto('posts')
      .values({ title: arg(0), content: arg(1), status: arg(2), publish_at: arg(5), author: arg(3), created_at: arg(4), updated_at: arg(4), revision: 1 })
      .returningAll())
    const [row] = await query.execute(this.db, [input.title, input.content, input.status, author, ts, this.publishAt(input)])
    if (row === undefined) throw new Error('INSERT … RETURNING returned no row')
    return toPost(row)
  }

  async replace (id: number, input: PostInput, expectedRevision: number, now: Date): Promise<WriteResult<Post>> {
    const query = this.prepared.get('replace', () => this.db.updateTable('posts')
      .set(eb => ({ title: arg(0), content: arg(1), status: arg(2), publish_at: arg(6), updated_at: arg(3), revision: eb('revision', '+', 1) }))
      .where('id', '=', arg<number>(4))
      .where('revision', '=', arg<number>(5))
      .returningAll())
    const [row] = await query.execute(this.db, [input.title, input.content, input.status, this.dialect.timestamp(now), id, expectedRevision, this.publishAt(input)])
    if (row) return { outcome: 'done', value: toPost(row) }
    return await this.missingOrStale(id)
  }

  private publishAt (input: PostInput): Timestamp | null {
    return input.publishAt == null ? null : this.dialect.timestamp(new Date(input.publishAt))
  }

  async publishScheduled (id: number, expectedRevision: number, now: Date): Promise<WriteResult<Post>> {
    const query = this.prepared.get('publish-scheduled', () => this.db.updateTable('posts')
      .set(eb => ({ status: 'published', publish_at: null, updated_at: arg(0), revision: eb('revision', '+', 1) }))
      .where('id', '=', arg<number>(1))
      .where('revision', '=', arg<number>(2))
      .where('status', '=', 'scheduled')
      .returningAll())
    const [row] = await query.execute(this.db, [this.dialect.timestamp(now), id, expectedRevision])
    if (row) return { outcome: 'done', value: toPost(row) }
    return await this.missingOrStale(id)
  }

  async due (now: Date, limit: number): Promise<{ id: number, revision: number }[]> {
    const rows = await this.db.selectFrom('posts').select(['id', 'revision'])
      .where('status', '=', 'scheduled').where('publish_at', '<=', this.dialect.timestamp(now))
      .orderBy('publish_at').orderBy('id').limit(limit).execute()
    return rows.map(r => ({ id: Number(r.id), revision: Number(r.revision) }))
  }

  async nextDue (): Promise<Date | null> {
    const row = await this.db.selectFrom('posts').select('publish_at')
      .where('status', '=', 'scheduled').where('publish_at', 'is not', null)
      .orderBy('publish_at').limit(1).executeTakeFirst()
    return row?.publish_at == null ? null : new Date(iso(row.publish_at))
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
