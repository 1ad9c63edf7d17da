import type { ProblemDeclaration } from '../../catalogue.ts'

declare module '../../errors.ts' {
  interface ResourceProblems { MEDIA_NOT_FOUND: true, MEDIA_IN_USE: true, IMAGE_UNREADABLE: true, UPLOAD_NOT_FOUND: true }
  interface ResourceFieldCodes { UNKNOWN_MEDIA: true }
}

/** Its problem codes. */
export const mediaProblems = {
  MEDIA_NOT_FOUND: {
    status: 404,
    title: 'Media not found',
    detail: 'No media with this id exists, or it is not yours.',
    translations: {
      de: { title: 'Medium nicht gefunden', detail: 'Es gibt kein Medium mit dieser ID, oder es gehört Ihnen nicht.' },
      fr: { title: 'Média introuvable', detail: 'Aucun média ne porte cet identifiant, ou il ne vous appartient pas.' },
      es: { title: 'Medio no encontrado', detail: 'No existe ningún medio con este id, o no es suyo.' },
    },
  },
  MEDIA_IN_USE: {
    status: 409,
    title: 'Media in use',
    detail: 'A post holds this media as its feature image; change that post first.',
    translations: {
      de: { title: 'Medium in Verwendung', detail: 'Ein Beitrag verwendet dieses Medium als Titelbild; ändern Sie zuerst diesen Beitrag.' },
      fr: { title: 'Média utilisé', detail: 'Un article utilise ce média comme image à la une ; modifiez d’abord cet article.' },
      es: { title: 'Medio en uso', detail: 'Una entrada usa este medio como imagen destacada; cambie primero esa entrada.' },
    },
  },
  IMAGE_UNREADABLE: {
    status: 422,
    title: 'Image unreadable',
    detail: 'The image has more pixels than the service accepts, or its decoder rejects it (truncated or corrupt).',
    translations: {
      de: { title: 'Bild nicht lesbar', detail: 'Das Bild hat mehr Pixel als der Dienst annimmt, oder sein Decoder weist es zurück (abgeschnitten oder beschädigt).' },
      fr: { title: 'Image illisible', detail: 'L’image a plus de pixels que le service n’en accepte, ou son décodeur la rejette (tronquée ou corrompue).' },
      es: { title: 'Imagen ilegible', detail: 'La imagen tiene más píxeles de los que el servicio acepta, o su decodificador la rechaza (truncada o corrupta).' },
    },
  },
  UPLOAD_NOT_FOUND: {
    status: 404,
    title: 'Upload not found',
    detail: 'No unfinished upload with this id exists: it was finished, terminated or has expired.',
    translations: {
      de: { title: 'Upload nicht gefunden', detail: 'Es gibt keinen unfertigen Upload mit dieser ID: er wurde abgeschlossen, beendet oder ist abgelaufen.' },
      fr: { title: 'Téléversement introuvable', detail: 'Aucun téléversement inachevé ne porte cet identifiant : il a été terminé, annulé ou a expiré.' },
      es: { title: 'Subida no encontrada', detail: 'No existe ninguna subida sin terminar con este id: se terminó, se canceló o caducó.' },
    },
  },
} satisfies Readonly<Record<string, ProblemDeclaration>>

/** Its codes of `errors[].code`. */
export const mediaFieldCodes = { UNKNOWN_MEDIA: 'No media with this id exists, or it is not yours.' } satisfies Readonly<Record<string, string>>
