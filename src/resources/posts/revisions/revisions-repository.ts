import type { Kysely } from 'kysely'
import type { Post } from '../post.ts'
import type { Revision, RevisionSummary } from './revision.ts'
import { arg, preparedQueries } from '../../../store/prepared.ts'
import { readPage } from '../../../store/read-page.ts'
import type { ListPage, ListQuery } from '../../../store/store.ts'
import { type Database, type DialectParts, iso } from '../../../store/tables.ts'
import type { PostRevisionsTable, RevisionStore } from '../store.ts'

type Row = Omit<PostRevisionsTable, 'content' | 'tags' | 'excerpt' | 'excerpt_derived'> & Partial<Pick<PostRevisionsTable, 'content' | 'tags' | 'excerpt' | 'excerpt_derived'>>

function toRevision<T extends RevisionSummary> (row: Row): T {
  const r: Record<string, unknown> = {
    postId: Number(row.post_id),
    number: Number(row.number),
    title: row.title,
    status: row.status,
    slug: row.slug,
    editor: row.editor,
    createdAt: iso(row.created_at),
  }
  if (row.content !== undefined) r.content = row.content
  if (row.tags !== undefined) r.tags = JSON.parse(row.tags) as string[]
  if (row.excerpt !== undefined) r.excerpt = row.excerpt
  if (row.excerpt_derived !== undefined) r.excerptDerived = Number(row.excerpt_derived) === 1
  r.publishAt = row.publish_at === null ? null : iso(row.publish_at)
  r.metaTitle = row.meta_title
  r.metaDescription = row.meta_description
  r.canonicalUrl = row.canonical_url
  return r as T
}

const SUMMARY_COLUMNS = ['post_id', 'number', 'title', 'status', 'slug', 'publish_at', 'editor', 'created_at', 'meta_title', 'meta_description', 'canonical_url'] as const

/** Revisions of posts, on the store's connection or on a unit of work's transaction. */
export class RevisionsRepository implements RevisionStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  async record (post: Post, editor: string, now: Date, keep: number): Promise<void> {
    const prepared = preparedQueries(this.dialect)
    const insert = prepared.get('revisions|record', () => this.db.insertInto('post_revisions').values({
      post_id: arg(0),
      number: arg(1),
      title: arg(2),
      content: arg(3),
      status: arg(4),
      slug: arg(5),
      tags: arg(6),
      excerpt: arg(7),
      excerpt_derived: arg(8),
      publish_at: arg(9),
      editor: arg(10),
      created_at: arg(11),
      meta_title: arg(12),
      meta_description: arg(13),
      canonical_url: arg(14),
    }))
    await insert.execute(this.db, [post.id, post.revision, post.title, post.content, post.status, post.slug, JSON.stringify(post.tags), post.excerpt,
      post.excerptDerived ? 1 : 0, post.publishAt === null ? null : this.dialect.timestamp(new Date(post.publishAt)), editor, this.dialect.timestamp(now),
      post.metaTitle, post.metaDescription, post.canonicalUrl])
    // Numbers are the post's revisions, one per change, so the newest `keep` are the last `keep` numbers.
    if (post.revision > keep) {
      await prepared.get('revisions|prune', () => this.db.deleteFrom('post_revisions').where('post_id', '=', arg<number>(0)).where('number', '<=', arg<number>(1)))
        .execute(this.db, [post.id, post.revision - keep])
    }
  }

  async find (postId: number, number: number): Promise<Revision | null> {
    const row = await this.db.selectFrom('post_revisions').selectAll().where('post_id', '=', postId).where('number', '=', number).executeTakeFirst()
    return row ? toRevision<Revision>(row) : null
  }

  async list (postId: number, query: ListQuery<'number', Record<string, never>>): Promise<ListPage<RevisionSummary>> {
    const mine = () => this.db.selectFrom('post_revisions').where('post_id', '=', postId)
    const count = async () => Number((await mine().select(eb => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()).n)
    // `id`, the tie-breaker every list's sort ends with, is the number: unique within a post.
    const page = await readPage(mine().select(SUMMARY_COLUMNS), query, () => 'post_revisions.number', count)
    return { ...page, items: page.items.map(r => toRevision<RevisionSummary>(r)) }
  }
}
