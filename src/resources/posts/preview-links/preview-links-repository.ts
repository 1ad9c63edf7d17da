import type { Generated, Kysely } from 'kysely'
import { arg, preparedQueries } from '../../../store/prepared.ts'
import { type Database, type DialectParts, iso, type Timestamp } from '../../../store/tables.ts'

/** A preview link as the store keeps it: never its token, only the token's hash. */
export interface PreviewLink {
  readonly id: number
  readonly postId: number
  /** The revision it shows; null: the post as it is now. */
  readonly revision: number | null
  readonly createdBy: string
  readonly createdAt: string
  readonly expiresAt: string
}

export interface PreviewLinksTable {
  id: Generated<number>
  post_id: number
  /** SHA-256 of the token, hex. */
  token_hash: string
  revision: number | null
  created_by: string
  created_at: Timestamp
  expires_at: Timestamp
}

export interface NewPreviewLink {
  readonly postId: number
  readonly tokenHash: string
  readonly revision: number | null
  readonly createdBy: string
  readonly createdAt: Date
  readonly expiresAt: Date
}

/**
 * A post's preview links. Every read goes to the database (no cache in the process), so a link
 * deleted through one instance stops working on all of them with that delete's commit.
 */
export interface PreviewLinkStore {
  create (link: NewPreviewLink): Promise<PreviewLink>
  /** The link whose token has this hash, if it has not expired at `now`. */
  findByTokenHash (tokenHash: string, now: Date): Promise<PreviewLink | null>
  /** The post's links that have not expired at `now`, newest first. */
  listLive (postId: number, now: Date): Promise<PreviewLink[]>
  /** Whether link `id` of post `postId` existed (and is now gone). */
  delete (postId: number, id: number): Promise<boolean>
}

const COLUMNS = ['id', 'post_id', 'revision', 'created_by', 'created_at', 'expires_at'] as const
type Row = Pick<PreviewLinksTable, 'post_id' | 'revision' | 'created_by' | 'created_at' | 'expires_at'> & { id: number | string }

function toLink (row: Row): PreviewLink {
  return {
    id: Number(row.id),
    postId: Number(row.post_id),
    revision: row.revision === null ? null : Number(row.revision),
    createdBy: row.created_by,
    createdAt: iso(row.created_at),
    expiresAt: iso(row.expires_at),
  }
}

export class PreviewLinksRepository implements PreviewLinkStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  async create (link: NewPreviewLink): Promise<PreviewLink> {
    const row = await this.db.insertInto('post_preview_links').values({
      post_id: link.postId,
      token_hash: link.tokenHash,
      revision: link.revision,
      created_by: link.createdBy,
      created_at: this.dialect.timestamp(link.createdAt),
      expires_at: this.dialect.timestamp(link.expiresAt),
    }).returning(COLUMNS).executeTakeFirstOrThrow()
    return toLink(row)
  }

  async findByTokenHash (tokenHash: string, now: Date): Promise<PreviewLink | null> {
    // An equality lookup in the unique index on the hash: what a caller controls is the token,
    // whose hash it cannot steer, so how long the lookup takes tells it nothing about real tokens.
    const query = preparedQueries(this.dialect).get('preview-links|by-hash', () => this.db.selectFrom('post_preview_links').select(COLUMNS)
      .where('token_hash', '=', arg<string>(0))
      .where('expires_at', '>', arg<Timestamp>(1)))
    const [row] = await query.execute(this.db, [tokenHash, this.dialect.timestamp(now)])
    return row === undefined ? null : toLink(row)
  }

  async listLive (postId: number, now: Date): Promise<PreviewLink[]> {
    const rows = await this.db.selectFrom('post_preview_links').select(COLUMNS)
      .where('post_id', '=', postId).where('expires_at', '>', this.dialect.timestamp(now))
      .orderBy('id', 'desc').execute()
    return rows.map(toLink)
  }

  async delete (postId: number, id: number): Promise<boolean> {
    const r = await this.db.deleteFrom('post_preview_links').where('post_id', '=', postId).where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) === 1
  }
}
