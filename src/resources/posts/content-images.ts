import type { Config } from '../../config.ts'
import type { ImageCatalogue } from '../../http/contract/resources.ts'
import type { Repositories } from '../../store/store.ts'
import { type ContentImages, imageSources } from './markdown.ts'

/** The service's own images a content shows (by their URLs in it), with what rendering them with variants needs. */
export function contentImages (catalogue: ImageCatalogue, config: Config) {
  return async (store: Repositories, content: string): Promise<ContentImages> => {
    const ids = new Map(imageSources(content).flatMap(src => { const id = catalogue.idOf(src); return id === null ? [] : [[src, id] as const] }))
    if (ids.size === 0) return new Map()
    const facts = await catalogue.find(store, [...ids.values()], config)
    return new Map([...ids].flatMap(([src, id]) => { const f = facts.get(id); return f === undefined ? [] : [[src, f] as const] }))
  }
}
