import { type Static, type TObject, Type } from '@sinclair/typebox'
import { type CollectionSpec, pagingQueryProperties } from '../../http/toolkit/paging.ts'
import { LinkSchema } from '../../http/contract/schemas.ts'
import { API_VERSIONS, idNameOf } from '../../http/protocol/versioning.ts'

/** 128 random bits, base64url: media URLs are public, so ids must not be guessable. */
export const MEDIA_ID_PATTERN = '^[A-Za-z0-9_-]{22}$'
const MediaIdSchema = Type.String({ pattern: MEDIA_ID_PATTERN, minLength: 22, maxLength: 22, description: 'Opaque: 22 characters of base64url (128 random bits).' })

export const MediaIdParamsSchema = Type.Object({ media_id: MediaIdSchema }, { additionalProperties: false })
export type MediaIdParams = Static<typeof MediaIdParamsSchema>

/** No `/`, `\`, NUL, control characters or the invisible marks that reorder text (bidirectional controls). */
export const FILENAME_PATTERN = '^[^/\\\\\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]{1,255}$'
const Filename = Type.String({ minLength: 1, maxLength: 255, pattern: FILENAME_PATTERN, 'x-error-code': 'INVALID_FORMAT', description: '1–255 characters; no `/`, `\\`, NUL, control or bidirectional control characters.' })
const Alt = Type.String({ maxLength: 500, description: 'Text alternative for readers who cannot see the image (0–500 characters).' })
const Caption = Type.String({ maxLength: 1000, description: '0–1 000 characters.' })
const Timestamp = Type.String({ format: 'date-time', maxLength: 30, description: 'RFC 3339, UTC, millisecond precision.' })

const fields = {
  filename: Filename,
  content_type: Type.String({ enum: ['image/jpeg', 'image/png', 'image/webp', 'image/avif', 'image/gif'], description: 'Judged by the bytes.' }),
  bytes: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The length of what `/file` serves.' }),
  width: Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'As seen: the EXIF orientation applied.' }),
  height: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$', minLength: 64, maxLength: 64, description: 'Of the stored bytes (metadata stripped).' }),
  alt: Alt,
  caption: Caption,
  placeholder: Type.String({ maxLength: 2000, pattern: '^data:image/png;base64,', description: 'A blurred preview (ThumbHash) as a PNG data URL, to show while the image loads.' }),
  author: Type.String({ maxLength: 256, description: 'Who uploaded it.' }),
  created_at: Timestamp,
  updated_at: Timestamp,
  _links: Type.Object({ self: Type.Ref(LinkSchema), file: Type.Ref(LinkSchema), image: Type.Ref(LinkSchema) }, { additionalProperties: false }),
}

function mediaSchemas (name: string, partial: boolean): [TObject, TObject] {
  const links = partial ? { _links: Type.Object({ self: Type.Ref(LinkSchema) }, { additionalProperties: false }) } : {}
  return API_VERSIONS.map(v => {
    const all = Type.Object({ [idNameOf(v, 'media')]: MediaIdSchema, ...fields, ...links })
    return Type.Object((partial ? Type.Partial(all) : all).properties, { $id: `${name}V${v}`, additionalProperties: false })
  }) as unknown as [TObject, TObject]
}

/** A media: `id` (v1) or `mediaId` (v2), with `_links` to itself, its file and its variants. */
export const [MediaV1Schema, MediaV2Schema] = mediaSchemas('Media', false)
/** A list item: every field, or exactly `fields`; always `_links.self`. */
export const [MediaListItemV1Schema, MediaListItemV2Schema] = mediaSchemas('MediaListItem', true)

export const MediaPatchSchema = Type.Object({
  filename: Type.Optional(Filename),
  alt: Type.Optional(Type.Union([Alt, Type.Null()])),
  caption: Type.Optional(Type.Union([Caption, Type.Null()])),
}, { $id: 'MediaPatch', additionalProperties: false, description: 'RFC 7396 merge patch: `alt` and `caption` set to null become empty.' })
export type MediaPatch = Static<typeof MediaPatchSchema>

export const MEDIA_FIELD_NAMES = { 1: ['id', ...Object.keys(fields).filter(f => f !== '_links')], 2: ['mediaId', ...Object.keys(fields).filter(f => f !== '_links')] } as const

export type MediaListSortKey = 'id' | 'created_at'
export const MEDIA: CollectionSpec<MediaListSortKey> = { name: 'media', sortKeys: ['id', 'created_at'], defaultSort: '-created_at', includes: [] }

export const ListMediaQuerySchema = Type.Object({
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[^\\u0000]*$', description: 'Matches filename, alt and caption (case-insensitive substring); no NUL (PostgreSQL text holds none).' })),
  ...Type.Partial(Type.Object(pagingQueryProperties)).properties,
}, { additionalProperties: false })

export const IMAGE_FORMATS = ['auto', 'webp', 'avif', 'jpeg', 'png'] as const
export function imageQuerySchema (widths: readonly number[]) {
  return Type.Object({
    w: Type.Optional(Type.Integer({ enum: [...widths], minimum: widths[0], maximum: widths.at(-1), description: `One of ${widths.join(', ')} (MEDIA_WIDTHS); wider than the original gives the original's width. Absent: the original's width.` })),
    format: Type.Optional(Type.String({ enum: [...IMAGE_FORMATS], description: '`auto` (default): AVIF or WebP when Accept names it, else the original\'s format.' })),
    q: Type.Optional(Type.Integer({ minimum: 30, maximum: 95, description: 'Quality, 30–95 (default 75).' })),
  }, { additionalProperties: false })
}

export const MEDIA_SCHEMAS = [MediaV1Schema, MediaV2Schema, MediaListItemV1Schema, MediaListItemV2Schema, MediaPatchSchema]
