import { type Static, Type } from '@sinclair/typebox'
import { LinkSchema, OperationStatusSchema } from '../../http/contract/schemas.ts'
import { IMPORT_SOURCES, NOT_IMPORTED, WARNINGS_MAX } from './import.ts'

export const ImportIdParamsSchema = Type.Object({
  import_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The import\'s id.' }),
}, { additionalProperties: false })
export type ImportIdParams = Static<typeof ImportIdParamsSchema>

export const CreateImportQuerySchema = Type.Object({
  dry_run: Type.Optional(Type.Boolean({ description: '`true`: read the whole file and report what the import would do, writing nothing.' })),
}, { additionalProperties: false })
export type CreateImportQuery = Static<typeof CreateImportQuerySchema>

/** The body as the route's validation sees it: the file's SHA-256 (the file itself went to storage as it arrived). */
export const ImportFileSchema = Type.String({
  maxLength: Number.MAX_SAFE_INTEGER,
  description: 'The export file itself: a WordPress export (WXR 1.1 or 1.2) as `application/xml`, `text/xml` or `application/rss+xml`, or a Ghost export (Settings → Export) as `application/json`.',
})

const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
const TimestampSchema = Type.String({ format: 'date-time', maxLength: 30 })

const ReportSchema = Type.Object({
  posts: Type.Object({
    created: Count,
    updated: Count,
    unchanged: Count,
    skipped: { ...Count, description: 'Items that are not posts (pages, attachments, menu items) and posts that could not be imported (each with a warning).' },
  }, { additionalProperties: false }),
  tags: { ...Count, description: 'Distinct tags (case-insensitive) the imported posts hold.' },
  media: Type.Object({ imported: Count, failed: Count }, { additionalProperties: false, description: 'Images fetched into media: none in this build (image URLs stay as they are).' }),
  redirects: { ...Count, description: 'Old slugs (the source\'s permalink, `_wp_old_slug`) that now answer 301.' },
  warnings: Type.Array(Type.Object({
    item: Type.String({ maxLength: 200, description: 'The item (`post 12 "Hello"`), or `file`.' }),
    message: Type.String({ maxLength: 2000 }),
  }, { additionalProperties: false }), { maxItems: WARNINGS_MAX, description: `What was mended or left out, per item (the first ${WARNINGS_MAX}).` }),
  warnings_omitted: { ...Count, description: `Warnings beyond the first ${WARNINGS_MAX}, counted only.` },
  not_imported: Type.Object(Object.fromEntries(NOT_IMPORTED.map(k => [k, Count])), { additionalProperties: false, description: 'What the file held that is not imported, by kind.' }),
}, { additionalProperties: false })

const fields = {
  status: OperationStatusSchema,
  source: Type.Unsafe<typeof IMPORT_SOURCES[number]>({ type: 'string', enum: [...IMPORT_SOURCES], description: 'The file\'s kind, judged by its bytes.' }),
  dry_run: Type.Boolean({ description: 'Whether the import only reports what it would do.' }),
  progress: Type.Integer({ minimum: 0, maximum: 100, description: 'Per cent of the file read; 100 once finished.' }),
  report: ReportSchema,
  failure: Type.Union([Type.String({ maxLength: 2048 }), Type.Null()], { description: 'Why the import failed; null unless `failed`.' }),
  created_at: TimestampSchema,
  finished_at: Type.Union([TimestampSchema, Type.Null()]),
  _links: Type.Object({ self: Type.Ref(LinkSchema) }, { additionalProperties: false }),
}

export const ImportV1Schema = Type.Object({ id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), ...fields }, { $id: 'ImportV1', additionalProperties: false })
export const ImportV2Schema = Type.Object({ importId: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), ...fields }, { $id: 'ImportV2', additionalProperties: false })

export const IMPORT_SCHEMAS = [ImportV1Schema, ImportV2Schema]
export const IMPORT_VERSIONS = { 1: ImportV1Schema, 2: ImportV2Schema } as const
