import { type Kysely, sql } from 'kysely'
import { isAdmin, may, type Viewer } from '../../domain/principal.ts'
import type { StoreModule } from '../../store/module.ts'
import { readPage } from '../../store/read-page.ts'
import type { ListPage, ListQuery } from '../../store/store.ts'
import { type Database, type DialectParts, iso, type Timestamp } from '../../store/tables.ts'
import * as m0001 from './0001-media.ts'

export interface MediaTable {
  id: string
  owner: string
  filename: string
  content_type: string
  bytes: number
  width: number
  height: number
  sha256: string
  alt: string
  caption: string
  placeholder: string
  created_at: Timestamp
  updated_at: Timestamp
  revision: number
}

export interface MediaVariantsTable {
  media_id: string
  width: number
  format: string
  quality: number
  state: 'computing' | 'ready'
  lease_token: string | null
  lease_until: Timestamp | null
  sha256: string | null
  bytes: number | null
  created_at: Timestamp
}

export interface MediaBlobClaimsTable {
  token: string
  blob_key: string
  expires_at: Timestamp
}

declare module '../../store/tables.ts' {
  interface Database { media: MediaTable, media_variants: MediaVariantsTable, media_blob_claims: MediaBlobClaimsTable }
}
declare module '../../store/store.ts' { interface Repositories { readonly media: MediaRepository } }

/** A media as the store keeps it. */
export interface Media {
  readonly id: string
  readonly owner: string
  readonly filename: string
  readonly contentType: string
  readonly bytes: number
  readonly width: number
  readonly height: number
  readonly sha256: string
  readonly alt: string
  readonly caption: string
  readonly placeholder: string
  readonly createdAt: string
  readonly updatedAt: string
  readonly revision: number
}

/** A media as its public file and variants are served. */
export type MediaFile = Pick<Media, 'id' | 'contentType' | 'bytes' | 'width' | 'sha256' | 'createdAt'>

export type NewMedia = Omit<Media, 'createdAt' | 'updatedAt' | 'revision'>
export type MediaChanges = Partial<Pick<Media, 'filename' | 'alt' | 'caption'>>
export type MediaSortKey = 'id' | 'created_at'

/** A variant's key: the media and what `/image` was asked for, the width already bounded by the original's. */
export interface VariantKey {
  readonly mediaId: string
  readonly width: number
  readonly format: string
  readonly quality: number
}

export type VariantState =
  | { readonly state: 'ready', readonly sha256: string, readonly bytes: number }
  | { readonly state: 'computing', readonly leaseUntil: string }

/** Where a blob of these bytes lives in the storage: spread over 256 folders by the digest's first byte. */
export function blobKey (sha256: string): string {
  return `${sha256.slice(0, 2)}/${sha256}`
}

function mediaOf (row: MediaTable): Media {
  return {
    id: row.id,
    owner: row.owner,
    filename: row.filename,
    contentType: row.content_type,
    bytes: Number(row.bytes),
    width: Number(row.width),
    height: Number(row.height),
    sha256: row.sha256,
    alt: row.alt,
    caption: row.caption,
    placeholder: row.placeholder,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    revision: Number(row.revision),
  }
}

/** Admins, and people whose role may change every media (editors), see everyone's; others their own. */
function seesAll (viewer: Viewer): boolean {
  return isAdmin(viewer) || may(viewer, 'media.any')
}

function likePattern (q: string): string {
  return `%${q.toLowerCase().replace(/[\\%_]/g, c => `\\${c}`)}%`
}

/** Media rows, their variants (each computed once, under a lease) and claims on blobs being written. */
export class MediaRepository {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  private visible (viewer: Viewer) {
    let q = this.db.selectFrom('media')
    if (!seesAll(viewer)) q = q.where('owner', '=', viewer?.subject ?? '')
    return q
  }

  async insert (m: NewMedia, now: Date): Promise<Media> {
    const ts = this.dialect.timestamp(now)
    const row = await this.db.insertInto('media').values({
      id: m.id,
      owner: m.owner,
      filename: m.filename,
      content_type: m.contentType,
      bytes: m.bytes,
      width: m.width,
      height: m.height,
      sha256: m.sha256,
      alt: m.alt,
      caption: m.caption,
      placeholder: m.placeholder,
      created_at: ts,
      updated_at: ts,
      revision: 1,
    }).returningAll().executeTakeFirstOrThrow()
    return mediaOf(row)
  }

  /** The media if `viewer` owns it or is admin. */
  async find (id: string, viewer: Viewer): Promise<Media | null> {
    const row = await this.visible(viewer).selectAll().where('id', '=', id).executeTakeFirst()
    return row === undefined ? null : mediaOf(row)
  }

  /** What a read of the media's file or variants needs, whoever asks (they are public). */
  async findPublic (id: string): Promise<MediaFile | null> {
    const row = await this.db.selectFrom('media').select(['id', 'content_type', 'bytes', 'width', 'sha256', 'created_at'])
      .where('id', '=', id).executeTakeFirst()
    if (row === undefined) return null
    return { id: row.id, contentType: row.content_type, bytes: Number(row.bytes), width: Number(row.width), sha256: row.sha256, createdAt: iso(row.created_at) }
  }

  /** `owner`'s oldest media of these stored bytes, if any (an image taken in again is not recorded twice). */
  async findByDigest (owner: string, sha256: string): Promise<Media | null> {
    const row = await this.db.selectFrom('media').selectAll().where('owner', '=', owner).where('sha256', '=', sha256)
      .orderBy('created_at').orderBy('id').limit(1).executeTakeFirst()
    return row === undefined ? null : mediaOf(row)
  }

  /** Those of these ids that exist, with their size (a post's feature image). */
  async findMany (ids: readonly string[]): Promise<Media[]> {
    if (ids.length === 0) return []
    const rows = await this.db.selectFrom('media').selectAll().where('id', 'in', [...ids]).execute()
    return rows.map(mediaOf)
  }

  /** `viewer`'s media (admin: all); `q` matches filename, alt and caption, case-insensitively. */
  async list (query: ListQuery<MediaSortKey, { q?: string }>, viewer: Viewer): Promise<ListPage<Media>> {
    const filtered = () => {
      let q = this.visible(viewer)
      const text = query.filter.q
      if (text !== undefined) {
        const p = likePattern(text)
        q = q.where(sql<boolean>`(lower(filename) LIKE ${p} ESCAPE '\\' OR lower(alt) LIKE ${p} ESCAPE '\\' OR lower(caption) LIKE ${p} ESCAPE '\\')`)
      }
      return q
    }
    const count = async () => Number((await filtered().select(eb => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n)
    const page = await readPage(filtered().selectAll(), query, key => `media.${key}`, count)
    return { ...page, items: page.items.map(mediaOf) }
  }

  /** Applies `changes` when the media is still at `revision` (if given): null when it is not `viewer`'s, 'stale' when it moved on. */
  async update (id: string, viewer: Viewer, changes: MediaChanges, now: Date, revision?: number): Promise<Media | null | 'stale'> {
    let q = this.db.updateTable('media').set(eb => ({ ...changes, updated_at: this.dialect.timestamp(now), revision: eb('revision', '+', 1) })).where('id', '=', id)
    if (revision !== undefined) q = q.where('revision', '=', revision)
    if (!seesAll(viewer)) q = q.where('owner', '=', viewer?.subject ?? '')
    const row = await q.returningAll().executeTakeFirst()
    if (row !== undefined) return mediaOf(row)
    return (await this.find(id, viewer)) === null ? null : 'stale'
  }

  /** Deletes the media and its variants' rows (their blobs go with the next sweep). */
  async delete (id: string): Promise<void> {
    await this.db.deleteFrom('media_variants').where('media_id', '=', id).execute()
    await this.db.deleteFrom('media').where('id', '=', id).execute()
  }

  async variant (k: VariantKey): Promise<VariantState | null> {
    const row = await this.db.selectFrom('media_variants').select(['state', 'sha256', 'bytes', 'lease_until'])
      .where('media_id', '=', k.mediaId).where('width', '=', k.width).where('format', '=', k.format).where('quality', '=', k.quality)
      .executeTakeFirst()
    if (row === undefined) return null
    if (row.state === 'ready') return { state: 'ready', sha256: row.sha256!, bytes: Number(row.bytes) }
    return { state: 'computing', leaseUntil: iso(row.lease_until!) }
  }

  /**
   * Takes the lease on computing a variant until `until`: when no row exists yet, or the last
   * holder's lease ran out (it died). False when it is ready or another holds a live lease.
   */
  async claimVariant (k: VariantKey, token: string, until: Date, now: Date): Promise<boolean> {
    const inserted = await this.db.insertInto('media_variants').values({
      media_id: k.mediaId,
      width: k.width,
      format: k.format,
      quality: k.quality,
      state: 'computing',
      lease_token: token,
      lease_until: this.dialect.timestamp(until),
      sha256: null,
      bytes: null,
      created_at: this.dialect.timestamp(now),
    }).onConflict(oc => oc.doNothing()).executeTakeFirst()
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1) return true
    const taken = await this.db.updateTable('media_variants')
      .set({ lease_token: token, lease_until: this.dialect.timestamp(until) })
      .where('media_id', '=', k.mediaId).where('width', '=', k.width).where('format', '=', k.format).where('quality', '=', k.quality)
      .where('state', '=', 'computing').where('lease_until', '<', this.dialect.timestamp(now))
      .executeTakeFirst()
    return Number(taken.numUpdatedRows) === 1
  }

  /** Records the computed variant, if `token` still holds its lease. */
  async finishVariant (k: VariantKey, token: string, sha256: string, bytes: number): Promise<boolean> {
    const r = await this.db.updateTable('media_variants')
      .set({ state: 'ready', sha256, bytes, lease_token: null, lease_until: null })
      .where('media_id', '=', k.mediaId).where('width', '=', k.width).where('format', '=', k.format).where('quality', '=', k.quality)
      .where('lease_token', '=', token)
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  /** Gives a lease back (the computation failed), so that the next request computes it at once. */
  async releaseVariant (k: VariantKey, token: string): Promise<void> {
    await this.db.deleteFrom('media_variants')
      .where('media_id', '=', k.mediaId).where('width', '=', k.width).where('format', '=', k.format).where('quality', '=', k.quality)
      .where('lease_token', '=', token).where('state', '=', 'computing')
      .execute()
  }

  /** Says a blob is being written under `key` until `expires`: the sweep keeps it meanwhile. */
  async claimBlob (token: string, key: string, expires: Date): Promise<void> {
    await this.db.insertInto('media_blob_claims').values({ token, blob_key: key, expires_at: this.dialect.timestamp(expires) }).execute()
  }

  async releaseBlob (token: string): Promise<void> {
    await this.db.deleteFrom('media_blob_claims').where('token', '=', token).execute()
  }

  /** Of `keys`, those a media, a variant or a live claim holds. */
  async heldKeys (keys: readonly string[], now: Date): Promise<Set<string>> {
    const held = new Set<string>()
    if (keys.length === 0) return held
    const digests = keys.map(k => k.slice(k.lastIndexOf('/') + 1))
    const fromMedia = await this.db.selectFrom('media').select('sha256').where('sha256', 'in', digests).execute()
    const fromVariants = await this.db.selectFrom('media_variants').select('sha256').where('sha256', 'in', digests).execute()
    for (const r of [...fromMedia, ...fromVariants]) if (r.sha256 !== null) held.add(blobKey(r.sha256))
    const claims = await this.db.selectFrom('media_blob_claims').select('blob_key')
      .where('blob_key', 'in', [...keys]).where('expires_at', '>', this.dialect.timestamp(now)).execute()
    for (const r of claims) held.add(r.blob_key)
    return held
  }

  /** Forgets claims that expired (their writers died, or gave up). */
  async dropExpiredClaims (now: Date): Promise<number> {
    const r = await this.db.deleteFrom('media_blob_claims').where('expires_at', '<=', this.dialect.timestamp(now)).executeTakeFirst()
    return Number(r.numDeletedRows)
  }
}

export const mediaStore: StoreModule = {
  name: 'media',
  migrations: { 'media/0001-media': m0001.migration },
  repository: (db, dialect): MediaRepository => new MediaRepository(db, dialect),
}
