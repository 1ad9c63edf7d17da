import type { Config } from '../../config.ts'
import type { ImageCatalogue, ImageFacts } from '../../http/contract/resources.ts'
import type { Repositories } from '../../store/store.ts'
import type { Media } from './store.ts'

/** `/media/{id}/file` or `/image`, after an optional origin and version prefix, with an optional query. */
const MEDIA_URL = /^(?:https?:\/\/[^/?#]+)?(?:\/v\d+)?\/media\/([A-Za-z0-9_-]{22})\/(?:file|image)(?:\?[^#]*)?(?:#.*)?$/

/** What a page needs of a media: its variants' paths for each width up to its own. */
export function factsOf (m: Media, widths: readonly number[]): ImageFacts {
  const path = `/media/${m.id}/image`
  const offered = widths.filter(w => w <= m.width)
  // An image narrower than every offered width is offered at its own.
  const srcset = (offered.length > 0 ? offered : [m.width]).map(w => `${path}?w=${w} ${w}w`).join(', ')
  return { id: m.id, width: m.width, height: m.height, alt: m.alt, placeholder: m.placeholder, url: path, srcset }
}

export const mediaCatalogue: ImageCatalogue = {
  async find (store: Repositories, ids: readonly string[], config: Config) {
    const found = await store.media.findMany([...new Set(ids)])
    return new Map(found.map(m => [m.id, factsOf(m, config.media.widths)]))
  },
  idOf (url: string) {
    return MEDIA_URL.exec(url.trim())?.[1] ?? null
  },
}
