import type { Compilable, Expression, ExpressionBuilder, Kysely, SelectQueryBuilder, SqlBool } from 'kysely'
import { sql } from 'kysely'
import type { NewPostWrite, Post, PostSortKey, PostStatus, PostSummary, PostWrite, SlugWrite } from './post.ts'
import { isAdmin, may, type Viewer } from '../../domain/principal.ts'
import { NULL_PUBLISHED_ASC, NULL_PUBLISHED_DESC } from './migrations/0001-content.ts'
import { candidateNumber, firstFreeSlug, slugCandidate } from '../../domain/slug.ts'
import { isSiteWord } from './site-words.ts'
import { tagKey } from './tags.ts'
import { arg, type PreparedQueries, preparedQueries } from '../../store/prepared.ts'
import { pageOf, pageQuery, pageValues } from '../../store/read-page.ts'
import type { ListPage, ListQuery, WriteResult } from '../../store/store.ts'
import type { Byline, ImageFacts } from '../../http/contract/resources.ts'
import type { DuePost, PostFilter, PostStore, PublishedPost, PublishedStats, SlugLookup, TagCount, TagsQuery } from './store.ts'
import { type Database, type DialectParts, iso, type Timestamp } from '../../store/tables.ts'

type SummaryRow = {
  id: number | string
  title: string
  status: PostStatus
  author: string
  authors: string
  created_at: Timestamp
  updated_at: Timestamp
  revision: number | string
  slug: string | null
  tags: string
  excerpt: string
  excerpt_derived: number | string | boolean
  published_at: Timestamp | null
  publish_at: Timestamp | null
  meta_title: string | null
  meta_description: string | null
  canonical_url: string | null
  feature_image: string | null
}
type PostRow = SummaryRow & { content: string, content_html: string }

function toSummary (row: SummaryRow): PostSummary {
  return {
    id: Number(row.id),
    title: row.title,
    status: row.status,
    author: row.author,
    authors: JSON.parse(row.authors) as string[],
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    revision: Number(row.revision),
    slug: row.slug ?? '',
    tags: JSON.parse(row.tags) as string[],
    excerpt: row.excerpt,
    excerptDerived: Number(row.excerpt_derived) === 1,
    publishedAt: row.published_at === null ? null : iso(row.published_at),
    publishAt: row.publish_at === null ? null : iso(row.publish_at),
    metaTitle: row.meta_title,
    metaDescription: row.meta_description,
    canonicalUrl: row.canonical_url,
    featureImage: row.feature_image === null ? null : JSON.parse(row.feature_image) as ImageFacts,
  }
}

function toPost (row: PostRow): Post {
  const post = toSummary(row) as Post
  post.content = row.content
  post.contentHtml = row.content_html
  return post
}

const SEO_COLUMNS = ['meta_title', 'meta_description', 'canonical_url'] as const
const POST_COLUMNS = ['id', 'title', 'content', 'status', 'author', 'authors', 'created_at', 'updated_at', 'revision', 'slug', 'tags', 'excerpt', 'excerpt_derived', 'content_html', 'published_at', 'publish_at', 'feature_image', ...SEO_COLUMNS] as const
const SUMMARY_COLUMNS = ['id', 'title', 'status', 'author', 'authors', 'created_at', 'updated_at', 'revision', 'slug', 'tags', 'excerpt', 'excerpt_derived', 'published_at', 'publish_at', 'feature_image', ...SEO_COLUMNS] as const
/** The feature image's columns: its facts as JSON (id first), and its id. */
function featureImageArgs (facts: ImageFacts | null): [string | null, string | null] {
  return facts === null ? [null, null] : [JSON.stringify(facts), facts.id]
}

/** The same, named with their table: a list by one tag reads them through a join with post_tags. */
const LIST_POST_COLUMNS = POST_COLUMNS.map(c => `posts.${c}` as const)
const LIST_SUMMARY_COLUMNS = SUMMARY_COLUMNS.map(c => `posts.${c}` as const)

/**
 * The column a sort key orders by. `published_at` has one per direction, null replaced by the far
 * end of time, so that nulls sort last both ways and each direction is one index range.
 */
function sortColumn (key: string, direction: 'asc' | 'desc'): string {
  if (key === 'published_at') return direction === 'asc' ? 'posts.published_asc' : 'posts.published_desc'
  return `posts.${key}`
}

/** A post's value for a sort key, as its cursor carries it (null `published_at` as its sort column holds it). */
export function postSortValue (post: PostSummary, key: string, direction: 'asc' | 'desc'): string | number {
  if (key === 'published_at') return post.publishedAt ?? (direction === 'asc' ? NULL_PUBLISHED_ASC : NULL_PUBLISHED_DESC)
  if (key === 'created_at') return post.createdAt
  if (key === 'updated_at') return post.updatedAt
  return post[key as 'id' | 'title' | 'slug']
}

/** A create's given slug is another post's (its current one or an alias). */
export class SlugTakenError extends Error {
  constructor (readonly slug: string) {
    super(`slug ${slug} is taken`)
    this.name = 'SlugTakenError'
  }
}

type ViewerKind = 'anonymous' | 'admin' | 'author'

/** Admins, and editors (who work on every post), see every post; anyone else their own and the published. */
function viewerKind (viewer: Viewer): ViewerKind {
  return viewer === null ? 'anonymous' : isAdmin(viewer) || may(viewer, 'posts.any') ? 'admin' : 'author'
}

type PostsEb = ExpressionBuilder<Database, 'posts'>

/** Whether a write names the post's authors anew (one at least); else it keeps the post's. */
function hasAuthors (write: PostWrite): write is PostWrite & { authors: Byline[] } {
  return write.authors != null && write.authors.length > 0
}

/** The post's `author` is `slug`, or one of its listed authors is. */
function byAuthor (eb: PostsEb, slug: string): Expression<SqlBool> {
  return eb.or([
    eb('posts.author', '=', slug),
    eb.exists(eb.selectFrom('post_authors').select(eb.lit(1).as('one')).whereRef('post_authors.post_id', '=', 'posts.id').where('post_authors.slug', '=', slug).limit(1)),
  ])
}

/** `published_at op at`, written on both sort columns (see FILTERS). */
function publishedRange (eb: PostsEb, op: '<' | '>', at: Timestamp): Expression<SqlBool> {
  return eb.and([eb('posts.published_asc' as 'posts.published_at', op, at), eb('posts.published_desc' as 'posts.published_at', op, at)])
}

/**
 * The equality and range filters of a post list, in the order their values are
 * bound: each present filter binds `values` and adds its condition.
 */
const FILTERS: readonly {
  readonly name: keyof PostFilter
  values (filter: PostFilter, d: DialectParts): unknown[]
  condition (eb: PostsEb, value: (i: number) => unknown, count: number): Expression<SqlBool>
}[] = [
  { name: 'status', values: f => [f.status], condition: (eb, v) => eb('posts.status', '=', v(0) as PostStatus) },
  { name: 'author', values: f => [f.author], condition: (eb, v) => byAuthor(eb, v(0) as string) },
  { name: 'slug', values: f => [f.slug], condition: (eb, v) => eb('posts.slug', '=', v(0) as string) },
  {
    name: 'tag',
    values: f => [...(f.tag ?? [])],
    // LIMIT 1 keeps SQLite (3.53) from turning the EXISTS into a join: that join let a post holding
    // two of the tags count twice towards OFFSET, so page 2 repeated the last post of page 1.
    condition: (eb, v, n) => eb.exists(eb.selectFrom('post_tags').select(eb.lit(1).as('one'))
      .whereRef('post_tags.post_id', '=', 'posts.id')
      .where('post_tags.tag_key', 'in', Array.from({ length: n }, (_, i) => v(i) as string))
      .limit(1)),
  },
  // On the sort columns, which equal published_at where it is set: a range of either one's index,
  // whichever the order reads. Null is far past in one and far future in the other, so one of the
  // two conditions always leaves out the posts never published.
  { name: 'published_after', values: (f, d) => [d.timestamp(new Date(f.published_after!))], condition: (eb, v) => publishedRange(eb, '>', v(0) as Timestamp) },
  { name: 'published_before', values: (f, d) => [d.timestamp(new Date(f.published_before!))], condition: (eb, v) => publishedRange(eb, '<', v(0) as Timestamp) },
  { name: 'updated_since', values: (f, d) => [d.timestamp(new Date(f.updated_since!))], condition: (eb, v) => eb('posts.updated_at', '>=', v(0) as Timestamp) },
]

/**
 * The posts table, on the store's connection or on a unit of work's transaction.
 *
 * Every query but full-text search is prepared: built and compiled by Kysely once per shape (the
 * viewer's kind, which filters, sort and paging are present) with `arg` placeholders, then run with
 * this request's values (src/store/prepared.ts). The values go, in order, into `args`.
 */
export class PostsRepository implements PostStore {
  private readonly prepared: PreparedQueries
  /**
   * SQLite's full-text index is fed after the commit (search-indexer.ts): a write queues its post.
   * PostgreSQL's is a generated column, kept by the row's own statement.
   */
  private readonly searchQueued: boolean

  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {
    this.prepared = preparedQueries(dialect)
    this.searchQueued = dialect.kind === 'sqlite'
  }

  /** Queues post `id` for the full-text index (its entry made again, or removed when the post is gone). */
  private async queueSearch (id: number): Promise<void> {
    if (!this.searchQueued) return
    await this.prepared.get('search-queue', () => this.db.insertInto('post_search_queue').values({ post_id: arg<number>(0) })
      .onConflict(oc => oc.column('post_id').doNothing()))
      .execute(this.db, [id])
  }

  async indexSearch (limit: number): Promise<number> {
    if (!this.searchQueued) return 0
    const queued = await this.prepared.get('search-queued', () => this.db.selectFrom('post_search_queue').select('post_id')
      .orderBy('post_id').limit(arg<number>(0)))
      .execute(this.db, [limit])
    if (queued.length === 0) return 0
    const ids = JSON.stringify(queued.map(r => Number(r.post_id)))
    // The index holds no text (contentless): an entry is removed by rowid, then made from the row
    // as it is now; a post deleted since has none made. Queue entries go in the same transaction.
    await sql`DELETE FROM posts_fts WHERE rowid IN (SELECT value FROM json_each(${ids}))`.execute(this.db)
    await sql`INSERT INTO posts_fts (rowid, title, content, tags)
      SELECT id, title, content, tags FROM posts WHERE id IN (SELECT value FROM json_each(${ids}))`.execute(this.db)
    await sql`DELETE FROM post_search_queue WHERE post_id IN (SELECT value FROM json_each(${ids}))`.execute(this.db)
    return queued.length
  }

  async searchBacklog (): Promise<number> {
    if (!this.searchQueued) return 0
    const row = await this.db.selectFrom('post_search_queue').select(eb => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
    return Number(row.n)
  }

  /**
   * Visibility for `viewer` (admins: none). `author` stands for the viewer's subject, which the
   * caller puts into the arguments where the returned condition needs it.
   */
  private visible (eb: PostsEb, kind: ViewerKind, author: () => string): Expression<SqlBool> | null {
    if (kind === 'admin') return null
    if (kind === 'anonymous') return eb('posts.status', '=', 'published')
    return eb.or([eb('posts.status', '=', 'published'), byAuthor(eb, author())])
  }

  private present (filter: PostFilter) {
    return FILTERS.filter(f => filter[f.name] !== undefined && !(f.name === 'tag' && filter.tag!.length === 0))
  }

  /** The values a filtered query binds, in order: the viewer's subject (authors), then each present filter's. */
  private filterArgs (filter: PostFilter, viewer: Viewer): unknown[] {
    const args: unknown[] = []
    if (viewerKind(viewer) === 'author') args.push(viewer!.subject)
    for (const f of this.present(filter)) args.push(...f.values(filter, this.dialect))
    return args
  }

  /** What decides a filtered query's SQL text: which filters are present (and how many tags). */
  private filterShape (filter: PostFilter, viewer: Viewer): string {
    return `${viewerKind(viewer)}|${this.present(filter).map(f => f.name === 'tag' ? `tag${filter.tag!.length}` : f.name).join(',')}`
  }

  /**
   * The posts `viewer` may see that pass `filter`; `value(i)` is what to bind for the i-th of
   * `filterArgs`: the value itself, or a placeholder. Full-text search is built by the dialect.
   */
  private filtered (filter: PostFilter, viewer: Viewer, value: (i: number) => unknown, byTag = false) {
    const kind = viewerKind(viewer)
    // By one tag in created_at order (tagOrdered), the tag's rows in post_tags lead: the join
    // walks post_tags_key_created_at_idx and stops at the page's end (0003-tag-order).
    const from = byTag
      ? this.db.selectFrom('post_tags').innerJoin('posts', 'posts.id', 'post_tags.post_id') as unknown as SelectQueryBuilder<Database, 'posts', object>
      : this.db.selectFrom('posts')
    return from.where(eb => {
      const conds: Expression<SqlBool>[] = []
      let i = 0
      const vis = this.visible(eb, kind, () => value(i++) as string)
      if (vis) conds.push(vis)
      for (const f of this.present(filter)) {
        const n = f.values(filter, this.dialect).length
        const start = i
        conds.push(byTag && f.name === 'tag'
          ? sql<SqlBool>`${sql.ref('post_tags.tag_key')} = ${value(start)}`
          : f.condition(eb, j => value(start + j), n))
        i += n
      }
      if (filter.q !== undefined) conds.push(this.dialect.textSearch(eb, 'posts', filter.q))
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
    return `${what}|${this.filterShape(query.filter, viewer)}|${sort}|${position}|${query.offset ? 'offset' : ''}`
  }

  async findById (id: number, viewer: Viewer): Promise<Post | null> {
    const kind = viewerKind(viewer)
    const query = this.prepared.get(`find|${kind}`, () => this.db.selectFrom('posts').select(POST_COLUMNS)
      .where('id', '=', arg<number>(0))
      .where(eb => this.visible(eb, kind, () => arg<string>(1)) ?? eb.lit(true)))
    const [row] = await query.execute(this.db, kind === 'author' ? [id, viewer!.subject] : [id])
    return row ? toPost(row) : null
  }

  async findBySlug (slug: string, viewer: Viewer): Promise<SlugLookup> {
    const kind = viewerKind(viewer)
    const args = kind === 'author' ? [slug, viewer!.subject] : [slug]
    const current = this.prepared.get(`by-slug|${kind}`, () => this.db.selectFrom('posts').select(POST_COLUMNS)
      .where('slug', '=', arg<string>(0))
      .where(eb => this.visible(eb, kind, () => arg<string>(1)) ?? eb.lit(true)))
    const [row] = await current.execute(this.db, args)
    if (row) return { post: toPost(row) }
    const alias = this.prepared.get(`by-alias|${kind}`, () => this.db.selectFrom('post_slugs')
      .innerJoin('posts', 'posts.id', 'post_slugs.post_id')
      .select('posts.slug')
      .where('post_slugs.slug', '=', arg<string>(0))
      .where(eb => this.visible(eb as unknown as PostsEb, kind, () => arg<string>(1)) ?? eb.lit(true)))
    const [moved] = await alias.execute(this.db, args)
    return moved?.slug ? { movedTo: moved.slug } : null
  }

  async list (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<Post>> {
    return await this.page('page', query, viewer, filtered => filtered.select(LIST_POST_COLUMNS), toPost)
  }

  async listSummaries (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<ListPage<PostSummary>> {
    return await this.page('summaries', query, viewer, filtered => filtered.select(LIST_SUMMARY_COLUMNS), toSummary)
  }

  /**
   * Whether a list is by exactly one tag in created_at order (the default order, either way):
   * post_tags holds each tag's posts in that order, so the list reads them from its index instead
   * of walking every post in order and testing each for the tag. With two tags or more (a post
   * may hold several) and in any other order, the tag is an EXISTS lookup per post.
   */
  private tagOrdered (query: ListQuery<PostSortKey, PostFilter>): boolean {
    const [first, second] = query.sort
    return query.filter.tag?.length === 1 && query.filter.q === undefined && query.sort.length === 2 &&
      first!.key === 'created_at' && second!.key === 'id' && first!.direction === second!.direction
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
    const directions = new Map(query.sort.map(t => [t.key as string, t.direction]))
    const byTag = this.tagOrdered(query)
    const column = byTag
      ? (key: string) => key === 'id' ? 'post_tags.post_id' : 'post_tags.created_at'
      : (key: string) => sortColumn(key, directions.get(key) ?? 'asc')
    const [rows, total] = await Promise.all([
      this.run(`${this.listShape(what, query, viewer)}${byTag ? '|by-tag' : ''}`, query.filter, args, value =>
        pageQuery(select(this.filtered(query.filter, viewer, value, byTag)), query, column, i => value(filterArgs.length + i))),
      this.count(query, viewer),
    ])
    const page = pageOf(rows, query, total)
    return { ...page, items: page.items.map(map) }
  }

  /** Every post of the list, when the query asks for the count. */
  private async count (query: ListQuery<PostSortKey, PostFilter>, viewer: Viewer): Promise<number | undefined> {
    if (!query.count) return undefined
    const rows = await this.run(`count|${this.filterShape(query.filter, viewer)}`, query.filter, this.filterArgs(query.filter, viewer), value =>
      this.filtered(query.filter, viewer, value).select(eb => eb.fn.countAll<number | string>().as('n')))
    return Number(rows[0]?.n ?? 0)
  }

  async holdsImage (id: string): Promise<boolean> {
    const row = await this.db.selectFrom('posts').select('id').where('feature_image_id', '=', id).limit(1).executeTakeFirst()
    return row !== undefined
  }

  async create (write: NewPostWrite, author: string, now: Date): Promise<Post> {
    const wanted = write.slug
    const plain = 'given' in wanted ? wanted.given : wanted.derived
    // SQLite has one writer, which this unit of work holds: a slug found free stays free, so the row
    // is written with it at once (no second write of the row). A new post holds no slug yet, so a
    // given one that is held is another post's. Elsewhere (and for a derived slug found taken) the
    // claim settles it after the insert, and the row is updated with what it got.
    const early = this.dialect.kind === 'sqlite' && await this.slugFree(plain) ? plain : null
    if (early === null && 'given' in wanted && this.dialect.kind === 'sqlite') throw new SlugTakenError(plain)
    const ts = this.dialect.timestamp(now)
    const query = this.prepared.get('create', () => this.db.insertInto('posts')
      .values({
        title: arg(0),
        content: arg(1),
        status: arg(2),
        author: arg(3),
        created_at: arg(4),
        updated_at: arg(4),
        revision: 1,
        tags: arg(5),
        excerpt: arg(6),
        excerpt_derived: arg(7),
        content_html: arg(8),
        published_at: arg(9),
        publish_at: arg(10),
        meta_title: arg(11),
        meta_description: arg(12),
        canonical_url: arg(13),
        feature_image: arg(14),
        feature_image_id: arg(15),
        slug: arg(16),
        authors: arg(17),
      })
      .returning(POST_COLUMNS))
    const publishedAt = write.publishedAt === null ? null : this.dialect.timestamp(new Date(write.publishedAt))
    // A post with listed authors has the first as its author; one without keeps its principal's name.
    let [row] = await query.execute(this.db, [write.title, write.content, write.status, write.authors[0]?.slug ?? author, ts, JSON.stringify(write.tags), write.excerpt, write.excerptDerived ? 1 : 0, write.contentHtml, publishedAt, this.timestampOrNull(write.publishAt),
      write.metaTitle, write.metaDescription, write.canonicalUrl, ...featureImageArgs(write.featureImage), early, JSON.stringify(write.authors.map(a => a.slug))])
    if (row === undefined) throw new Error('INSERT … RETURNING returned no row')
    const id = Number(row.id)
    if (early !== null) {
      if (!await this.tryClaim(id, early)) throw new Error(`slug ${early} was found free, then taken inside one transaction`)
    } else {
      const slug = await this.claimSlug(id, wanted)
      if (slug === null) throw new SlugTakenError(plain)
      ;[row] = await this.prepared.get('create-slug', () => this.db.updateTable('posts').set({ slug: arg<string>(0) }).where('id', '=', arg<number>(1)).returning(POST_COLUMNS))
        .execute(this.db, [slug, id])
    }
    await this.insertTags(id, write.tags)
    await this.insertAuthors(id, write.authors)
    await this.queueSearch(id)
    return toPost(row!)
  }

  /** Whether no post holds `slug`, as its current slug or an alias, and it is not one of the site's words. */
  private async slugFree (slug: string): Promise<boolean> {
    if (isSiteWord(slug)) return false
    const rows = await this.prepared.get('slug-held', () => this.db.selectFrom('post_slugs').select('post_id')
      .where('slug', '=', arg<string>(0)))
      .execute(this.db, [slug])
    return rows.length === 0
  }

  /**
   * Claims a slug for post `id`: an insert into post_slugs whose primary key settles any race (on
   * PostgreSQL a concurrent claim of the same slug waits for the other transaction, then conflicts).
   * A given slug the post already holds (its current one, or an alias) is its own; another post's,
   * or one of the site's words, is taken (null). A derived one (never a site's word) takes the first free of `base`, `base-2`, `base-3` …: the plain
   * one is tried first; when it is taken, the least number a deletion freed (post_slug_gaps), else
   * the base's counter (post_slug_counters), says which number to try, so a title many posts share
   * costs the same as a new one. A base without a counter yet reads the slugs taken once and starts
   * one.
   */
  private async claimSlug (id: number, slug: SlugWrite): Promise<string | null> {
    if ('given' in slug) {
      // The site's words are taken by the site, even where a post held one before it was renamed.
      if (isSiteWord(slug.given)) return null
      if (await this.tryClaim(id, slug.given)) return slug.given
      const owner = await this.db.selectFrom('post_slugs').select('post_id').where('slug', '=', slug.given).executeTakeFirst()
      return owner !== undefined && Number(owner.post_id) === id ? slug.given : null
    }
    const base = slug.derived
    // Most titles are new: the plain slug is tried first, without reading what is taken.
    if (!isSiteWord(base) && await this.tryClaim(id, base)) return base
    for (;;) {
      // A gap is taken out as it is tried: found taken (a slug given since), it is gone all the same.
      const [gap] = await this.prepared.get('slug-gap-take', () => this.db.deleteFrom('post_slug_gaps')
        .where('base', '=', arg<string>(0))
        .where('n', '=', eb => eb.selectFrom('post_slug_gaps').select(e => e.fn.min<number>('n').as('n')).where('base', '=', arg<string>(0)))
        .returning('n'))
        .execute(this.db, [base])
      if (gap !== undefined) {
        const candidate = slugCandidate(base, Number(gap.n))
        if (await this.tryClaim(id, candidate)) return candidate
        continue
      }
      // The counter moves past the number it hands out, so concurrent creates try different ones;
      // a number found taken (a slug given, or claimed since) only moves it on.
      const [counted] = await this.prepared.get('slug-counter-next', () => this.db.updateTable('post_slug_counters')
        .set(eb => ({ next_n: eb('next_n', '+', 1) }))
        .where('base', '=', arg<string>(0))
        .returning('next_n'))
        .execute(this.db, [base])
      if (counted !== undefined) {
        const candidate = slugCandidate(base, Number(counted.next_n) - 1)
        if (await this.tryClaim(id, candidate)) return candidate
        continue
      }
      // No counter yet: the first free number from the slugs taken (the base and every `base-…`).
      const rows = await this.db.selectFrom('post_slugs').select('slug')
        .where(eb => eb.or([eb('slug', '=', base), eb.and([eb('slug', '>', `${base}-`), eb('slug', '<', `${base}.`)])]))
        .execute()
      const { slug: candidate, n } = firstFreeSlug(base, new Set(rows.map(r => r.slug)), 2)
      // A concurrent create that started the counter first keeps its own (the loop then uses it).
      await this.db.insertInto('post_slug_counters').values({ base, next_n: n + 1 })
        .onConflict(oc => oc.column('base').doNothing()).execute()
      if (await this.tryClaim(id, candidate)) return candidate
    }
  }

  /** Post `id`'s slugs, current and old. */
  private async slugsOf (id: number): Promise<string[]> {
    const rows = await this.prepared.get('slugs-of-post', () => this.db.selectFrom('post_slugs').select('slug')
      .where('post_id', '=', arg<number>(0)))
      .execute(this.db, [id])
    return rows.map(r => r.slug)
  }

  /**
   * Numbered slugs a deletion freed become gaps of their bases' counters (below the counter only:
   * above it every number is tried anyway), so a derived slug still takes the first free number.
   */
  private async freeSlugs (slugs: readonly string[]): Promise<void> {
    for (const slug of slugs) {
      const numbered = candidateNumber(slug)
      if (numbered === null) continue
      const { prefix, n, cut } = numbered
      await this.db.insertInto('post_slug_gaps')
        .columns(['base', 'n'])
        .expression(eb => eb.selectFrom('post_slug_counters').select(e => ['base', e.val(n).as('n')]).where('next_n', '>', n)
          // A base cut to fit beside its number: every base that starts with what is left of it.
          .where(e => cut ? e.and([e('base', '>=', prefix), e('base', '<', `${prefix}~`)]) : e('base', '=', prefix)))
        .onConflict(oc => oc.doNothing())
        .execute()
    }
  }

  private async tryClaim (id: number, slug: string): Promise<boolean> {
    const rows = await this.prepared.get('claim-slug', () => this.db.insertInto('post_slugs').values({ slug: arg(0), post_id: arg(1) })
      .onConflict(oc => oc.column('slug').doNothing())
      .returning('slug'))
      .execute(this.db, [slug, id])
    return rows.length === 1
  }

  /** Post `id`'s tags, with its created_at: the order a list by one tag reads them in. */
  private async insertTags (id: number, tags: readonly string[]): Promise<void> {
    if (tags.length === 0) return
    // One shape per count of tags (at most a post's limit of them): compiled once, then only bound.
    const insert = this.prepared.get(`insert-tags|${tags.length}`, () => this.db.insertInto('post_tags').values(tags.map((_, i) => ({
      post_id: arg<number>(0),
      tag_key: arg<string>(2 * i + 1),
      name: arg<string>(2 * i + 2),
      created_at: this.db.selectFrom('posts').select('created_at').where('id', '=', arg<number>(0)),
    }))))
    await insert.execute(this.db, [id, ...tags.flatMap(name => [tagKey(name), name])])
  }

  /** Post `id`'s listed authors, by place. */
  private async insertAuthors (id: number, authors: readonly Byline[]): Promise<void> {
    if (authors.length === 0) return
    const insert = this.prepared.get(`insert-authors|${authors.length}`, () => this.db.insertInto('post_authors').values(authors.map((_, i) => ({
      post_id: arg<number>(0),
      position: i,
      user_id: arg<string>(2 * i + 1),
      slug: arg<string>(2 * i + 2),
    }))))
    await insert.execute(this.db, [id, ...authors.flatMap(a => [a.id, a.slug])])
  }

  async replace (id: number, write: PostWrite, expectedRevision: number, now: Date): Promise<WriteResult<Post> | { outcome: 'slug-taken' }> {
    // The slug is claimed before the row changes: the unique index on posts.slug is then never the one to refuse it.
    const slug = write.slug === null ? null : await this.claimSlug(id, write.slug)
    if (write.slug !== null && slug === null) return { outcome: 'slug-taken' }
    const query = this.prepared.get(`replace|${slug === null ? '' : 'slug'}|${write.tags === null ? '' : 'tags'}|${write.featureImage === undefined ? '' : 'image'}|${hasAuthors(write) ? 'authors' : ''}`, () => this.db.updateTable('posts')
      .set(eb => ({
        title: arg(0),
        content: arg(1),
        status: arg(2),
        updated_at: arg(3),
        excerpt: arg(4),
        excerpt_derived: arg(5),
        content_html: arg(6),
        published_at: arg(7),
        publish_at: arg(12),
        meta_title: arg(13),
        meta_description: arg(14),
        canonical_url: arg(15),
        ...(write.featureImage === undefined ? {} : { feature_image: arg<string | null>(16), feature_image_id: arg<string | null>(17) }),
        revision: eb('revision', '+', 1),
        ...(slug === null ? {} : { slug: arg<string>(10) }),
        ...(write.tags === null ? {} : { tags: arg<string>(11) }),
        ...(hasAuthors(write) ? { authors: arg<string>(18), author: arg<string>(19) } : {}),
      }))
      .where('id', '=', arg<number>(8))
      .where('revision', '=', arg<number>(9))
      .returning(POST_COLUMNS))
    const publishedAt = write.publishedAt === null ? null : this.dialect.timestamp(new Date(write.publishedAt))
    const [row] = await query.execute(this.db, [
      write.title, write.content, write.status, this.dialect.timestamp(now), write.excerpt, write.excerptDerived ? 1 : 0, write.contentHtml, publishedAt,
      id, expectedRevision, slug, write.tags === null ? null : JSON.stringify(write.tags), this.timestampOrNull(write.publishAt),
      write.metaTitle, write.metaDescription, write.canonicalUrl,
      ...featureImageArgs(write.featureImage ?? null),
      hasAuthors(write) ? JSON.stringify(write.authors.map(a => a.slug)) : null, write.authors?.[0]?.slug ?? null,
    ])
    if (!row) return await this.missingOrStale(id)
    if (hasAuthors(write)) {
      await this.db.deleteFrom('post_authors').where('post_id', '=', id).execute()
      await this.insertAuthors(id, write.authors)
    }
    if (write.tags !== null) {
      await this.db.deleteFrom('post_tags').where('post_id', '=', id).execute()
      await this.insertTags(id, write.tags)
    }
    await this.queueSearch(id)
    return { outcome: 'done', value: toPost(row) }
  }

  async delete (id: number, expectedRevision: number): Promise<WriteResult<true>> {
    // post_slugs and post_tags go with the row (ON DELETE CASCADE): the slug and its aliases are free again.
    const slugs = await this.slugsOf(id)
    const r = await this.db.deleteFrom('posts').where('id', '=', id).where('revision', '=', expectedRevision).executeTakeFirst()
    if (Number(r.numDeletedRows) === 1) {
      await this.freeSlugs(slugs)
      await this.queueSearch(id)
      return { outcome: 'done', value: true }
    }
    return await this.missingOrStale(id)
  }

  private timestampOrNull (at: string | null): Timestamp | null {
    return at === null ? null : this.dialect.timestamp(new Date(at))
  }

  async publishScheduled (id: number, expectedRevision: number, publishedAt: string | null, now: Date): Promise<WriteResult<Post>> {
    const query = this.prepared.get('publish-scheduled', () => this.db.updateTable('posts')
      .set(eb => ({
        status: 'published',
        publish_at: null,
        published_at: arg(3),
        updated_at: arg(0),
        revision: eb('revision', '+', 1),
      }))
      .where('id', '=', arg<number>(1))
      .where('revision', '=', arg<number>(2))
      .where('status', '=', 'scheduled')
      .returning(POST_COLUMNS))
    const [row] = await query.execute(this.db, [this.dialect.timestamp(now), id, expectedRevision, this.timestampOrNull(publishedAt)])
    if (row) return { outcome: 'done', value: toPost(row) }
    return await this.missingOrStale(id)
  }

  async due (now: Date, limit: number): Promise<DuePost[]> {
    const rows = await this.db.selectFrom('posts').select(['id', 'revision', 'publish_at', 'published_at'])
      .where('status', '=', 'scheduled').where('publish_at', '<=', this.dialect.timestamp(now))
      .orderBy('publish_at').orderBy('id').limit(limit).execute()
    return rows.map(r => ({ id: Number(r.id), revision: Number(r.revision), publishAt: iso(r.publish_at!), publishedAt: r.published_at === null ? null : iso(r.published_at) }))
  }

  async nextDue (): Promise<Date | null> {
    const row = await this.db.selectFrom('posts').select('publish_at')
      .where('status', '=', 'scheduled').where('publish_at', 'is not', null)
      .orderBy('publish_at').limit(1).executeTakeFirst()
    return row?.publish_at == null ? null : new Date(iso(row.publish_at))
  }

  async published (afterId: number, limit: number): Promise<PublishedPost[]> {
    // A range of posts_status_id_idx: each page costs the same at any depth.
    const rows = await this.prepared.get('published', () => this.db.selectFrom('posts').select(['id', 'slug', 'updated_at', 'feature_image'])
      .where('status', '=', 'published').where('id', '>', arg<number>(0))
      .orderBy('id').limit(arg<number>(1)))
      .execute(this.db, [afterId, limit])
    return rows.map(r => ({
      id: Number(r.id),
      slug: r.slug ?? '',
      updatedAt: iso(r.updated_at),
      image: r.feature_image === null ? null : (JSON.parse(r.feature_image) as ImageFacts).url,
    }))
  }

  async publishedStats (): Promise<PublishedStats> {
    // One pass over posts_status_id_idx (and a look at posts_status_updated_at_idx for the newest).
    const row = await this.db.selectFrom('posts')
      .select(eb => [eb.fn.countAll<number | string>().as('n'), eb.fn.max('updated_at').as('newest'), eb.fn.sum<number | string | null>('id').as('ids')])
      .where('status', '=', 'published').executeTakeFirstOrThrow()
    return { count: Number(row.n), newest: row.newest === null ? null : iso(row.newest as Timestamp), idSum: String(row.ids ?? 0) }
  }

  async publishedIdAt (offset: number): Promise<number | null> {
    const row = await this.db.selectFrom('posts').select('id').where('status', '=', 'published')
      .orderBy('id').limit(1).offset(offset).executeTakeFirst()
    return row === undefined ? null : Number(row.id)
  }

  async authorHolds (userId: string): Promise<boolean> {
    const row = await this.db.selectFrom('post_authors').select('post_id').where('user_id', '=', userId).limit(1).executeTakeFirst()
    return row !== undefined
  }

  async reassignAuthor (from: Byline, to: Byline): Promise<void> {
    const posts = await this.db.selectFrom('post_authors').select('post_id').where('user_id', '=', from.id).execute()
    for (const { post_id: postId } of posts) {
      const rows = await this.db.selectFrom('post_authors').select(['user_id', 'slug']).where('post_id', '=', postId).orderBy('position').execute()
      const authors: Byline[] = []
      for (const r of rows) {
        const a = r.user_id === from.id ? to : { id: r.user_id, slug: r.slug }
        if (!authors.some(b => b.id === a.id)) authors.push(a)
      }
      await this.rewriteAuthors(Number(postId), authors)
    }
  }

  async renameAuthor (user: Byline): Promise<void> {
    const posts = await this.db.selectFrom('post_authors').select('post_id').where('user_id', '=', user.id).execute()
    for (const { post_id: postId } of posts) {
      const rows = await this.db.selectFrom('post_authors').select(['user_id', 'slug']).where('post_id', '=', postId).orderBy('position').execute()
      await this.rewriteAuthors(Number(postId), rows.map(r => r.user_id === user.id ? user : { id: r.user_id, slug: r.slug }))
    }
  }

  /** Post `id`'s authors become `authors` (its author the first), a change of its representation: its revision moves on. */
  private async rewriteAuthors (id: number, authors: readonly Byline[]): Promise<void> {
    await this.db.deleteFrom('post_authors').where('post_id', '=', id).execute()
    await this.insertAuthors(id, authors)
    await this.db.updateTable('posts')
      .set(eb => ({ authors: JSON.stringify(authors.map(a => a.slug)), revision: eb('revision', '+', 1), ...(authors[0] === undefined ? {} : { author: authors[0].slug }) }))
      .where('id', '=', id).execute()
  }

  async publishedAuthorCounts (userIds?: readonly string[]): Promise<Map<string, number>> {
    if (userIds !== undefined && userIds.length === 0) return new Map()
    let query = this.db.selectFrom('post_authors').innerJoin('posts', 'posts.id', 'post_authors.post_id')
      .where('posts.status', '=', 'published')
      .groupBy('post_authors.user_id')
      .select(eb => ['post_authors.user_id', eb.fn.countAll<number | string>().as('n')])
    if (userIds !== undefined) query = query.where('post_authors.user_id', 'in', userIds)
    const rows = await query.execute()
    return new Map(rows.map(r => [r.user_id, Number(r.n)]))
  }

  private async missingOrStale (id: number): Promise<{ outcome: 'missing' } | { outcome: 'stale' }> {
    const exists = await this.db.selectFrom('posts').select('id').where('id', '=', id).executeTakeFirst()
    return exists ? { outcome: 'stale' } : { outcome: 'missing' }
  }

  async tags (query: ListQuery<string, TagsQuery>, viewer: Viewer): Promise<ListPage<TagCount>> {
    const kind = viewerKind(viewer)
    const prefix = query.filter.q === undefined ? undefined : tagKey(query.filter.q)
    const grouped = this.db.selectFrom('post_tags')
      .innerJoin('posts', 'posts.id', 'post_tags.post_id')
      .where(eb => {
        const conds: Expression<SqlBool>[] = []
        const vis = this.visible(eb as unknown as PostsEb, kind, () => viewer!.subject)
        if (vis) conds.push(vis)
        if (prefix !== undefined) conds.push(eb(eb.fn('substr', ['post_tags.tag_key', eb.lit(1), eb.lit(Array.from(prefix).length)]), '=', prefix))
        return eb.and(conds)
      })
      .groupBy('post_tags.tag_key')
      .select(eb => ['post_tags.tag_key as id', eb.fn.min('post_tags.name').as('name'), eb.fn.countAll<number | string>().as('count')])
    const base = this.db.selectFrom(grouped.as('t')).selectAll()
    const column = (key: string) => key === 'count' ? 't.count' : 't.id'
    const values = pageValues(query)
    const [rows, total] = await Promise.all([
      pageQuery(base, query, column, i => values[i]).execute(),
      query.count ? this.db.selectFrom(grouped.as('t')).select(eb => eb.fn.countAll<number | string>().as('n')).executeTakeFirst() : undefined,
    ])
    const page = pageOf(rows, query, total === undefined ? undefined : Number(total.n))
    return { ...page, items: page.items.map(r => ({ id: String(r.id), name: String(r.name), count: Number(r.count) })) }
  }
}
