import type { Kysely } from 'kysely'
import type { Post } from '../../domain/post.ts'
import type { Revision, RevisionSummary } from '../../domain/revision.ts'
import { readPage } from '../read-page.ts'
import type { ListPage, ListQuery, RevisionStore } from '../store.ts'
import { type Database, type DialectParts, iso, type PostRevisionsTable } from '../tables.ts'

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
  return r as T
}

const SUMMARY_COLUMNS = ['post_id', 'number', 'title', 'status', 'slug', 'publish_at', 'editor', 'created_at'] as const

/** Revisions of posts, on the store's connection or on a unit of work's transaction. */
export class RevisionsRepository implements RevisionStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  async record (post: Post, editor: string, now: Date, keep: number): Promise<void> {
    await this.db.insertInto('post_revisions').values({
      post_id: post.id,
      number: post.revision,
      title: post.title,
      content: post.content,
      status: post.status,
      slug: post.slug,
      tags: JSON.stringify(post.tags),
      excerpt: post.excerpt,
      excerpt_derived: post.excerptDerived ? 1 : 0,
      publish_at: post.publishAt === null ? null : this.dialect.timestamp(new Date(post.publishAt)),
      editor,
      created_at: this.dialect.timestamp(now),
    }).execute()
    // Numbers are the post's revisions, one per change, so the newest `keep` are the last `keep` numbers.
    if (post.revision > keep) {
      await this.db.deleteFrom('post_revisions').where('post_id', '=', post.id).where('number', '<=', post.revision - keep).execute()
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
