import { Decoder, Encoder, type Packet } from 'socket.io-parser';

/**
 * Socket.IO's parser with one more refusal: an acknowledgement id that is not a safe integer (beyond
 * 2^53 the decoder's Number() has lost digits, and the answer would be written as e.g. `1e+21`,
 * which no client parses). The packet is refused the way the parser refuses any malformed packet: the
 * throw reaches socket.io's Client, which closes the connection.
 *
 * Only public parts are used: the `parser` option of the Server, and the Decoder's `decoded` event,
 * which socket.io's Client subscribes to (test/integration/realtime-library-patches.test.ts checks
 * it still does).
 */
class SafeAckDecoder extends Decoder {
  override on(event: string, listener: (...args: never[]) => void): this {
    if (event !== 'decoded') return super.on(event as 'decoded', listener as (packet: Packet) => void);
    const checked = (packet: Packet): void => {
      if (packet.id !== undefined && !Number.isSafeInteger(packet.id)) throw new Error('invalid acknowledgement id');
      (listener as (packet: Packet) => void)(packet);
    };
    // The emitter's convention for wrapped listeners (as `once` does): `off(event, listener)` still finds it.
    (checked as { fn?: unknown }).fn = listener;
    return super.on('decoded', checked);
  }
}

export const safeParser = { Encoder, Decoder: SafeAckDecoder };
