import { type Static, Type } from '@sinclair/typebox'
import { CALLBACK_URL_MAX } from '../../facilities/events/index.ts'
import { LinkSchema, OperationStatusSchema, TimestampSchema } from '../../http/contract/schemas.ts'
import { EXPORT_FORMATS, FILTER_STATUSES } from './export.ts'

export const ExportIdParamsSchema = Type.Object({
  export_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The export\'s id.' }),
}, { additionalProperties: false })
export type ExportIdParams = Static<typeof ExportIdParamsSchema>

const PostStatusSchema = Type.Unsafe<typeof FILTER_STATUSES[number]>({ type: 'string', enum: [...FILTER_STATUSES] })
const FilterSchema = Type.Object({
  status: Type.Optional({ ...PostStatusSchema, description: 'Only posts in this state.' }),
}, { additionalProperties: false, description: 'Which posts to export; none: every post the requester may see.' })

export const CreateExportBodySchema = Type.Object({
  format: Type.Unsafe<typeof EXPORT_FORMATS[number]>({ type: 'string', enum: [...EXPORT_FORMATS], description: 'The file format: `ndjson`, one post per line as the API version represents it; `wxr`, a WordPress eXtended RSS 1.2 file that WordPress (Tools → Import → WordPress) and this service (POST /imports) read.' }),
  filter: Type.Optional(FilterSchema),
  callback_url: Type.Optional(Type.String({
    maxLength: CALLBACK_URL_MAX,
    description: 'http(s) URL that receives a signed POST (Standard Webhooks) when the export ends. Its host must resolve to public addresses only (no loopback, private or link-local: 422).',
  })),
}, { $id: 'CreateExportBody', additionalProperties: false })
export type CreateExportBody = Static<typeof CreateExportBodySchema>

const NullableTimestamp = Type.Union([TimestampSchema, Type.Null()])

const fields = {
  status: OperationStatusSchema,
  progress: Type.Integer({ minimum: 0, maximum: 100, description: 'Per cent of the matching posts written; 100 once succeeded.' }),
  format: Type.Unsafe<typeof EXPORT_FORMATS[number]>({ type: 'string', enum: [...EXPORT_FORMATS] }),
  filter: FilterSchema,
  callback_url: Type.Union([Type.String({ maxLength: CALLBACK_URL_MAX }), Type.Null()]),
  exported: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Posts written so far.' }),
  total: Type.Union([Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), Type.Null()], { description: 'Posts that matched when the run began; null before.' }),
  size: Type.Union([Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), Type.Null()], { description: 'The file\'s length in bytes, once succeeded.' }),
  error: Type.Union([Type.String({ maxLength: 2048 }), Type.Null()], { description: 'Why the export failed (or why its last run did).' }),
  created_at: TimestampSchema,
  updated_at: TimestampSchema,
  finished_at: NullableTimestamp,
  _links: Type.Object({
    self: Type.Ref(LinkSchema),
    download: Type.Optional(Type.Ref(LinkSchema, { description: 'The file; present once the export succeeded.' })),
  }, { additionalProperties: false }),
}

export const ExportV1Schema = Type.Object({ id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), ...fields }, { $id: 'ExportV1', additionalProperties: false })
export const ExportV2Schema = Type.Object({ exportId: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), ...fields }, { $id: 'ExportV2', additionalProperties: false })

/** The webhook body: `{type, data}` with `data` the job. */
export const ExportEventV1Schema = Type.Object({
  type: Type.Union([Type.Literal('export.succeeded'), Type.Literal('export.failed')]),
  data: Type.Ref(ExportV1Schema),
}, { $id: 'ExportEventV1', additionalProperties: false })
export const ExportEventV2Schema = Type.Object({
  type: Type.Union([Type.Literal('export.succeeded'), Type.Literal('export.failed')]),
  data: Type.Ref(ExportV2Schema),
}, { $id: 'ExportEventV2', additionalProperties: false })

export const EXPORT_SCHEMAS = [CreateExportBodySchema, ExportV1Schema, ExportV2Schema, ExportEventV1Schema, ExportEventV2Schema]

export const EXPORT_VERSIONS = {
  1: { job: ExportV1Schema, event: ExportEventV1Schema },
  2: { job: ExportV2Schema, event: ExportEventV2Schema },
} as const
