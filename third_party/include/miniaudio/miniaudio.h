/*
 * Stand-in for miniaudio.h. The ollama module zip drops llama.cpp's vendor/
 * directory, and tact never decodes audio, so this header only provides the
 * names mtmd-helper.cpp uses. Every decoder call fails, so audio input is
 * reported as "not an audio file" instead of being decoded.
 */
#ifndef TACT_MINIAUDIO_STUB_H
#define TACT_MINIAUDIO_STUB_H

#include <stddef.h>
#include <stdint.h>

#ifndef MA_API
#define MA_API static
#endif

typedef int ma_result;
typedef uint32_t ma_uint32;
typedef uint64_t ma_uint64;
typedef enum { ma_format_unknown = 0, ma_format_f32 = 5 } ma_format;
typedef enum { ma_encoding_format_unknown = 0, ma_encoding_format_wav } ma_encoding_format;

#define MA_SUCCESS 0
#define MA_ERROR (-1)
#define MA_NOT_IMPLEMENTED (-29)

typedef struct { ma_format format; ma_uint32 channels; ma_uint32 sampleRate; } ma_decoder_config;
typedef struct { int unused; } ma_decoder;
typedef struct { ma_encoding_format encodingFormat; ma_format format; ma_uint32 channels; ma_uint32 sampleRate; } ma_encoder_config;
typedef struct { int unused; } ma_encoder;

MA_API ma_decoder_config ma_decoder_config_init(ma_format f, ma_uint32 ch, ma_uint32 rate) {
    ma_decoder_config c; c.format = f; c.channels = ch; c.sampleRate = rate; return c;
}
MA_API ma_result ma_decoder_init_memory(const void *data, size_t size, const ma_decoder_config *cfg, ma_decoder *dec) {
    (void)data; (void)size; (void)cfg; (void)dec; return MA_NOT_IMPLEMENTED;
}
MA_API ma_result ma_decoder_get_length_in_pcm_frames(ma_decoder *dec, ma_uint64 *len) {
    (void)dec; if (len) *len = 0; return MA_NOT_IMPLEMENTED;
}
MA_API ma_result ma_decoder_read_pcm_frames(ma_decoder *dec, void *out, ma_uint64 n, ma_uint64 *read) {
    (void)dec; (void)out; (void)n; if (read) *read = 0; return MA_NOT_IMPLEMENTED;
}
MA_API ma_result ma_decoder_uninit(ma_decoder *dec) { (void)dec; return MA_SUCCESS; }
MA_API ma_encoder_config ma_encoder_config_init(ma_encoding_format e, ma_format f, ma_uint32 ch, ma_uint32 rate) {
    ma_encoder_config c; c.encodingFormat = e; c.format = f; c.channels = ch; c.sampleRate = rate; return c;
}
MA_API ma_result ma_encoder_init_file(const char *path, const ma_encoder_config *cfg, ma_encoder *enc) {
    (void)path; (void)cfg; (void)enc; return MA_NOT_IMPLEMENTED;
}
MA_API ma_result ma_encoder_write_pcm_frames(ma_encoder *enc, const void *in, ma_uint64 n, ma_uint64 *written) {
    (void)enc; (void)in; (void)n; if (written) *written = 0; return MA_NOT_IMPLEMENTED;
}
MA_API void ma_encoder_uninit(ma_encoder *enc) { (void)enc; }

#endif
