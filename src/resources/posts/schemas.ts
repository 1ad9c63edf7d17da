import { type Static, Type } from '@sinclair/typebox'
import { pagingQueryProperties } from '../../http/toolkit/paging.ts'
import { LinkSchema } from '../../http/contract/schemas.ts'
import { CANONICAL_URL_MAX, CONTENT_MAX, EXCERPT_MAX, META_DESCRIPTION_MAX, META_TITLE_MAX, TAG_MAX, TAGS_MAX, TITLE_MAX } from './limits.ts'
import { POST_STATUSES } from './post.ts'
import { SLUG_MAX, SLUG_PATTERN } from '../../domain/slug.ts'

export const PostIdParamsSchema = Type.Object({
  post_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The post\'s id.' }),
}, { additionalProperties: false })
export type PostIdParams = Static<typeof PostIdParamsSchema>

export const PostSlugParamsSchema = Type.Object({
  slug: Type.String({ minLength: 1, maxLength: 200, description: 'A slug the post holds now, or held before a rename (then 301).' }),
}, { additionalProperties: false })
export type PostSlugParams = Static<typeof PostSlugParamsSchema>

// An enum rather than a union of literals, so that a wrong value is reported once, listing the allowed ones.
const StatusSchema = Type.Unsafe<typeof POST_STATUSES[number]>({ type: 'string', enum: [...POST_STATUSES], description: 'Only the author and admins see drafts, archived and scheduled posts. A `scheduled` post is published by the service at its `publish_at`.' })
const TimestampSchema = Type.String({ format: 'date-time', maxLength: 30, description: 'RFC 3339, UTC, millisecond precision.' })
const PUBLISH_AT_DESCRIPTION = 'When a `scheduled` post is to be published (RFC 3339, in the future); null for any other status. Sent with another status it is 422 PUBLISH_AT_NOT_ALLOWED, unless it is the post\'s own, which is then cleared.'
const PublishAtSchema = Type.Union([TimestampSchema, Type.Null()], { description: PUBLISH_AT_DESCRIPTION })
/** An RFC 3339 timestamp as a client may send it: any offset, any fraction of a second. */
const PublishAtBodySchema = Type.Union([Type.String({ format: 'date-time', maxLength: 40 }), Type.Null()], { description: PUBLISH_AT_DESCRIPTION })
/** Ids are assigned by the service and stay below 2^53. */
const IdSchema = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })
/** An absolute http or https URL with a host: `format: uri` alone would take `mailto:` or `urn:`. */
const HTTP_URL_PATTERN = '^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\\s]+([/?#]\\S*)?$'
const META_TITLE_DESCRIPTION = `What search engines show as the post's title: 0–${META_TITLE_MAX} characters; null when not set.`
const META_DESCRIPTION_DESCRIPTION = `What search engines show under the title: 0–${META_DESCRIPTION_MAX} characters; null when not set.`
const CANONICAL_URL_DESCRIPTION = `Where the post's original lives, for search engines: an absolute http or https URL of at most ${CANONICAL_URL_MAX} characters; null when not set.`
/** The SEO fields as a post and a revision show them. */
const seoFields = {
  meta_title: Type.Union([Type.String({ maxLength: META_TITLE_MAX }), Type.Null()], { description: META_TITLE_DESCRIPTION }),
  meta_description: Type.Union([Type.String({ maxLength: META_DESCRIPTION_MAX }), Type.Null()], { description: META_DESCRIPTION_DESCRIPTION }),
  canonical_url: Type.Union([Type.String({ maxLength: CANONICAL_URL_MAX, format: 'uri' }), Type.Null()], { description: CANONICAL_URL_DESCRIPTION }),
}
/** A title as sent may carry white space around its 1–200 characters, up to this many in all. */
export const TITLE_RAW_MAX = 1000

const MediaIdSchema = Type.String({ pattern: '^[A-Za-z0-9_-]{22}$', minLength: 22, maxLength: 22 })
/** A media named by a write: any text is looked up, and one that names no media is UNKNOWN_MEDIA. */
const MediaReferenceSchema = Type.String({ maxLength: 200 })
const FeatureImageSchema = Type.Object({
  id: MediaIdSchema,
  url: Type.String({ maxLength: 200 }),
  width: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
  height: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
  alt: Type.String({ maxLength: 500 }),
  placeholder: Type.String({ maxLength: 2000 }),
  srcset: Type.String({ maxLength: 4000, description: 'HTML\'s `srcset`: `<url> <w>w`, comma separated.' }),
}, { additionalProperties: false })

/** A post names at most this many authors. */
export const AUTHORS_MAX = 10

const fields = {
  title: Type.String({ maxLength: TITLE_MAX, description: `1–${TITLE_MAX} characters after trimming; stored trimmed.` }),
  content: Type.String({ maxLength: CONTENT_MAX, description: `0–${CONTENT_MAX} characters.` }),
  status: StatusSchema,
  publish_at: PublishAtSchema,
  created_at: TimestampSchema,
  updated_at: TimestampSchema,
  // A JWT's `sub` lies within a token of at most 8 192 characters.
  author: Type.String({ maxLength: 8192, description: 'The first of `authors`; for a post no person wrote, the name (`sub`) of the credential that created it.' }),
  authors: Type.Array(Type.String({ minLength: 1, maxLength: SLUG_MAX, pattern: SLUG_PATTERN }), { maxItems: AUTHORS_MAX, description: 'The slugs of the users who wrote the post, in order (the first is its primary author; each has a page at `/authors/{slug}`). Empty for a post no person wrote.' }),
  slug: Type.String({ minLength: 1, maxLength: SLUG_MAX, pattern: SLUG_PATTERN, description: 'The post\'s name in URLs (`/posts/by-slug/{slug}`): unique across posts; derived from the title when not given.' }),
  tags: Type.Array(Type.String({ minLength: 1, maxLength: TAG_MAX }), { maxItems: TAGS_MAX, description: 'Tags as given, trimmed; no two equal but for case.' }),
  excerpt: Type.String({ maxLength: EXCERPT_MAX, description: 'A summary for list pages: as given, or derived from the content (its first 200 characters of plain text).' }),
  published_at: Type.Union([TimestampSchema, Type.Null()], { description: 'When the post first became published; null until then. Kept through edits, unpublishing and republishing.' }),
  // Escaping and links make HTML longer than its Markdown; 20 times the content's limit bounds it.
  content_html: Type.String({ maxLength: 20 * CONTENT_MAX, description: 'The content read as Markdown (CommonMark, GitHub tables, strikethrough, autolinks) rendered to HTML: raw HTML escaped, only http, https and mailto URLs kept.' }),
  ...seoFields,
  feature_image: Type.Union([FeatureImageSchema, Type.Null()], { description: 'The cover image, or null: its variants for every offered width up to its own in `srcset`, `url` at its own width in the format the browser prefers.' }),
}

export const PostV1Schema = Type.Object({ id: IdSchema, ...fields }, { $id: 'PostV1', additionalProperties: false })
export type PostV1 = Static<typeof PostV1Schema>

const PostLinksSchema = Type.Object({
  self: Type.Ref(LinkSchema),
  update: Type.Ref(LinkSchema),
  delete: Type.Ref(LinkSchema),
}, { additionalProperties: false })

export const PostV2Schema = Type.Object({ postId: IdSchema, ...fields, _links: PostLinksSchema }, { $id: 'PostV2', additionalProperties: false })
export type PostV2 = Static<typeof PostV2Schema>

/** List items: `{id, title}` by default, exactly the `fields` asked for otherwise. */
export const PostListItemV1Schema = Type.Partial(Type.Object({ id: IdSchema, ...fields }), { $id: 'PostListItemV1', additionalProperties: false })
export const PostListItemV2Schema = Type.Composite([
  Type.Partial(Type.Object({ postId: IdSchema, ...fields })),
  Type.Object({ _links: Type.Object({ self: Type.Ref(LinkSchema) }, { additionalProperties: false }) }),
], { $id: 'PostListItemV2', additionalProperties: false })

const CONTENT_FIELDS = ['authors', 'slug', 'tags', 'excerpt', 'published_at', 'publish_at', 'content_html', 'meta_title', 'meta_description', 'canonical_url', 'feature_image'] as const
export const FIELD_NAMES = {
  1: ['id', 'title', 'content', 'status', 'created_at', 'updated_at', 'author', ...CONTENT_FIELDS],
  2: ['postId', 'title', 'content', 'status', 'created_at', 'updated_at', 'author', ...CONTENT_FIELDS],
} as const

function bodySchema (idName: 'id' | 'postId', $id: string) {
  const readOnly = { readOnly: true, description: 'Read-only: accepted and ignored, so a representation can be sent back as it was read.' }
  return Type.Object({
    [idName]: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, ...readOnly, description: 'Read-only; on PUT it must equal the id in the path.' })),
    title: Type.String({ trimmedLength: { minimum: 1, maximum: TITLE_MAX }, maxLength: TITLE_RAW_MAX, description: `${fields.title.description} At most ${TITLE_RAW_MAX} characters as sent.` }),
    content: fields.content,
    status: Type.Optional({ ...StatusSchema, description: 'Default `published`.' }),
    publish_at: Type.Optional(PublishAtBodySchema),
    // Every way a slug can be wrong is INVALID_FORMAT.
    slug: Type.Optional(Type.String({ ...fields.slug, 'x-error-code': 'INVALID_FORMAT', description: `${fields.slug.description} 1–${SLUG_MAX} characters, lowercase ASCII letters and digits joined by single hyphens. On PUT and PATCH, absent keeps the current slug; a new one keeps the old as an alias.` })),
    tags: Type.Optional(Type.Array(Type.String({ trimmedLength: { minimum: 1, maximum: TAG_MAX }, maxLength: TAG_MAX * 4 }), { maxItems: TAGS_MAX, description: `At most ${TAGS_MAX}, each 1–${TAG_MAX} characters after trimming; compared case-insensitively (the first spelling is kept). Default none.` })),
    // One schema with two types (not a union), so a string too long is reported once, as TOO_LONG.
    excerpt: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: EXCERPT_MAX, description: `0–${EXCERPT_MAX} characters; absent or null: derived from the content.` })),
    // One schema with two types each (not a union), so that a string too long is reported once.
    meta_title: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: META_TITLE_MAX, description: `${META_TITLE_DESCRIPTION} Absent: null.` })),
    meta_description: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: META_DESCRIPTION_MAX, description: `${META_DESCRIPTION_DESCRIPTION} Absent: null.` })),
    canonical_url: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: CANONICAL_URL_MAX, format: 'uri', pattern: HTTP_URL_PATTERN, description: `${CANONICAL_URL_DESCRIPTION} Absent: null.` })),
    feature_image: Type.Optional(Type.Union([MediaReferenceSchema, Type.Object({ id: MediaReferenceSchema }, { additionalProperties: true }), Type.Null()], { description: 'The id of an image (`/media`), the object a read gives (its `id` is used), or null. An unknown id: 422 UNKNOWN_MEDIA. Absent on PUT: none.' })),
    published_at: Type.Optional(Type.Unknown({ ...readOnly })),
    content_html: Type.Optional(Type.Unknown({ ...readOnly })),
    // Whatever their value: they are ignored, so a client never fails on them.
    created_at: Type.Optional(Type.Unknown({ ...readOnly })),
    updated_at: Type.Optional(Type.Unknown({ ...readOnly })),
    author: Type.Optional(Type.Unknown({ ...readOnly })),
    authors: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: AUTHORS_MAX, uniqueItems: true, description: `1–${AUTHORS_MAX} distinct user slugs, the first the primary author (empty only as a post no person wrote is read, so it can be sent back). Absent: on create, yourself (a person) or none (a key); on PUT and PATCH, unchanged. Only an editor or above names others (else 403 \`ROLE_FORBIDS\`); a slug of no user: 422 \`UNKNOWN_AUTHOR\`.` })),
    _links: Type.Optional(Type.Unknown({ ...readOnly })),
  }, { $id, additionalProperties: false })
}

/** The body of POST and PUT: the whole post. Unknown members are 422 UNKNOWN_FIELD. */
export const PostBodyV1Schema = bodySchema('id', 'PostBodyV1')
export const PostBodyV2Schema = bodySchema('postId', 'PostBodyV2')
export interface PostBody {
  id?: number
  postId?: number
  title: string
  content: string
  status?: typeof POST_STATUSES[number]
  publish_at?: string | null
  slug?: string
  tags?: string[]
  excerpt?: string | null
  meta_title?: string | null
  meta_description?: string | null
  canonical_url?: string | null
  feature_image?: string | { id: string } | null
  authors?: string[]
}

export const ListPostsQuerySchema = Type.Object({
  status: Type.Optional(StatusSchema),
  // At least one character that is not white space, and no NUL (neither full-text engine takes it).
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$', description: 'Full-text search over title, content and tags: every word must match.' })),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, pattern: '[^,\\s]', description: 'Comma list of tags: posts holding any of them (case-insensitive).' })),
  author: Type.Optional(Type.String({ minLength: 1, maxLength: 8192, description: 'Posts by this author: any of its `authors` (a user\'s slug), or the `author` of a post no person wrote.' })),
  slug: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The post with this current slug (not an old one).' })),
  published_after: Type.Optional(Type.String({ format: 'date-time', maxLength: 40, description: 'RFC 3339: posts published strictly after.' })),
  published_before: Type.Optional(Type.String({ format: 'date-time', maxLength: 40, description: 'RFC 3339: posts published strictly before.' })),
  updated_since: Type.Optional(Type.String({ format: 'date-time', maxLength: 40, description: 'RFC 3339: posts updated at or after (for mirrors).' })),
  ...Type.Partial(Type.Object(pagingQueryProperties)).properties,
}, { additionalProperties: false })

export const RevisionNumberParamsSchema = Type.Object({
  post_id: PostIdParamsSchema.properties.post_id,
  number: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'The revision\'s number: 1 for the post as created, one more for each change.' }),
}, { additionalProperties: false })
export type RevisionNumberParams = Static<typeof RevisionNumberParamsSchema>

const revisionFields = {
  number: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Per post: 1, 2, 3 … (older numbers may have been pruned, see REVISIONS_KEEP).' }),
  title: fields.title,
  content: fields.content,
  status: StatusSchema,
  slug: fields.slug,
  tags: fields.tags,
  excerpt: fields.excerpt,
  publish_at: PublishAtSchema,
  // `system` for the scheduled switch.
  editor: Type.String({ maxLength: 8192, description: 'The `sub` of who made the change; `system` for the scheduled switch.' }),
  created_at: { ...TimestampSchema, description: 'When the change was made.' },
  ...seoFields,
}

/** A post's values after one change; the same in every version. */
export const RevisionSchema = Type.Object(revisionFields, { $id: 'Revision', additionalProperties: false })
export const RevisionListItemSchema = Type.Partial(Type.Object(revisionFields), { $id: 'RevisionListItem', additionalProperties: false })
export const REVISION_FIELD_NAMES = ['number', 'title', 'status', 'slug', 'publish_at', 'editor', 'created_at', 'meta_title', 'meta_description', 'canonical_url'] as const
export const ListRevisionsQuerySchema = Type.Object(Type.Partial(Type.Object(pagingQueryProperties)).properties, { additionalProperties: false })

/** Every schema posts share with the app (each has an `$id`, so the document names it). */
export const POST_SCHEMAS = [PostV1Schema, PostV2Schema, PostListItemV1Schema, PostListItemV2Schema, PostBodyV1Schema, PostBodyV2Schema, RevisionSchema, RevisionListItemSchema]

/** What differs between the versions of a post. */
export const POST_VERSIONS = {
  1: { idName: 'id', post: PostV1Schema, item: PostListItemV1Schema, body: PostBodyV1Schema, readOnly: ['id', 'created_at', 'updated_at', 'author', 'published_at', 'content_html'] },
  2: { idName: 'postId', post: PostV2Schema, item: PostListItemV2Schema, body: PostBodyV2Schema, readOnly: ['postId', 'created_at', 'updated_at', 'author', '_links', 'published_at', 'content_html'] },
} as const
