/* Loading (kernels.h): hyper-parameters and checked tensors of a GGUF. */
#include "kernels_impl.h"

/* ======================================================================
 * Loading
 * ====================================================================== */

int vt_load_check_arch(const vt_gguf *g, const char *arch, vt_error *err)
{
    vt_gguf_str a;
    if (!vt_gguf_get_str(g, "general.architecture", &a))
        return vt_error_set(err, VT_EINPUT, "%s: key general.architecture: missing", vt_gguf_name(g));
    if (a.len != strlen(arch) || memcmp(a.ptr, arch, a.len) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: key general.architecture: \"%.*s\": expected \"%s\"",
                            vt_gguf_name(g), (int)(a.len > 64 ? 64 : a.len), a.ptr, arch);
    return VT_OK;
}

/* The key "<arch>.<key>" (its full name into full): *present 1 if in the
 * file; 0 if missing and not required; missing and required is an error. */
static int find_key(const vt_gguf *g, const char *arch, const char *key, int required,
                    char full[128], int *present, vt_error *err)
{
    snprintf(full, 128, "%s.%s", arch, key);
    *present = vt_gguf_find_key(g, full) >= 0;
    if (!*present && required)
        return vt_error_set(err, VT_EINPUT, "%s: key %s: missing", vt_gguf_name(g), full);
    return VT_OK;
}

int vt_load_i32(const vt_gguf *g, const char *arch, const char *key, int required, int32_t def,
                int32_t *out, vt_error *err)
{
    char full[128];
    int present, rc = find_key(g, arch, key, required, full, &present, err);
    int64_t v;
    if (rc || !present) {
        *out = def;
        return rc;
    }
    if (!vt_gguf_get_i64(g, full, &v) || v <= 0 || v > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "%s: key %s: expected a positive 32-bit integer",
                            vt_gguf_name(g), full);
    *out = (int32_t)v;
    return VT_OK;
}

int vt_load_f32(const vt_gguf *g, const char *arch, const char *key, int required, float def,
                float *out, vt_error *err)
{
    char full[128];
    int present, rc = find_key(g, arch, key, required, full, &present, err);
    double v;
    if (rc || !present) {
        *out = def;
        return rc;
    }
    if (!vt_gguf_get_f64(g, full, &v) || !(v >= 0.0) || !isfinite(v))
        return vt_error_set(err, VT_EINPUT, "%s: key %s: expected a finite non-negative number",
                            vt_gguf_name(g), full);
    *out = (float)v;
    return VT_OK;
}

const vt_gguf_tensor *vt_load_find(const vt_gguf *g, const char *name, int64_t ne0, int64_t ne1,
                                   vt_error *err)
{
    const vt_gguf_tensor *t = vt_gguf_find_tensor(g, name);
    if (!t) {
        vt_error_set(err, VT_EINPUT, "%s: tensor %s: missing", vt_gguf_name(g), name);
        return NULL;
    }
    int64_t want[4] = { ne0, ne1 ? ne1 : 1, 1, 1 };
    if (memcmp(t->ne, want, sizeof want) != 0) {
        vt_error_set(err, VT_EINPUT,
                     "%s: tensor %s: shape [%lld, %lld, %lld, %lld]: expected [%lld, %lld, 1, 1]",
                     vt_gguf_name(g), name, (long long)t->ne[0], (long long)t->ne[1],
                     (long long)t->ne[2], (long long)t->ne[3], (long long)want[0],
                     (long long)want[1]);
        return NULL;
    }
    return t;
}

const float *vt_load_f32_matrix(const vt_gguf *g, const char *name, int64_t ne0, int64_t ne1,
                                vt_error *err)
{
    const vt_gguf_tensor *t = vt_load_find(g, name, ne0, ne1, err);
    if (!t)
        return NULL;
    if (t->type != VT_TYPE_F32) {
        const vt_codec *c = vt_codec_by_type(t->type);
        vt_error_set(err, VT_EINPUT, "%s: tensor %s: type %s: expected F32", vt_gguf_name(g), name,
                     c ? c->name : "?");
        return NULL;
    }
    if (((uintptr_t)t->data & 3u) != 0) {
        vt_error_set(err, VT_EINPUT, "%s: tensor %s: data not 4-byte aligned", vt_gguf_name(g),
                     name);
        return NULL;
    }
    return (const float *)t->data;
}

const float *vt_load_vector(const vt_gguf *g, const char *name, int64_t n, vt_error *err)
{
    return vt_load_f32_matrix(g, name, n, 0, err);
}

int vt_load_matrix(const vt_gguf *g, const char *name, int64_t cols, int64_t rows, vt_mat *out,
                   vt_error *err)
{
    const vt_gguf_tensor *t = vt_load_find(g, name, cols, rows, err);
    if (!t)
        return err->code;
    const vt_codec *c = vt_codec_by_type(t->type);
    if (!c || !c->decode_f32)
        return vt_error_set(err, VT_EINPUT, "%s: tensor %s: type %s: no decoder for this codec",
                            vt_gguf_name(g), name, c ? c->name : "?");
    if (cols % c->block_elems != 0)
        return vt_error_set(err, VT_EINPUT,
                            "%s: tensor %s: type %s: rows of %lld elements: expected a multiple "
                            "of the block size %lld",
                            vt_gguf_name(g), name, c->name, (long long)cols,
                            (long long)c->block_elems);
    if (t->type == VT_TYPE_F32 && ((uintptr_t)t->data & 3u) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: tensor %s: data not 4-byte aligned",
                            vt_gguf_name(g), name);
    out->data = t->data;
    out->codec = c;
    out->rows = rows;
    out->cols = cols;
    out->row_bytes = vt_codec_row_bytes(c, cols);
    out->act = vt_act_type_of(t->type);
    out->tensor_rows = rows;
    out->packed = NULL;
    out->plant_row = -1;
    out->plant_scale = 1.0f;
    vt_plant p;
    if (vt_plant_from_env(&p, err))
        return err->code;
    if (p.tensor[0] && strcmp(p.tensor, name) == 0) {
        if (p.row >= rows)
            return vt_error_set(err, VT_EINPUT, "VT_ENGINE_PLANT: %s: row %lld: expected < %lld rows",
                                name, (long long)p.row, (long long)rows);
        out->plant_row = p.row;
        out->plant_scale = p.scale;
    }
    return VT_OK;
}

int vt_load_embeddings(const vt_gguf *g, int64_t n_embd, int32_t *n_vocab, vt_mat *embd,
                       vt_mat *output, const float **output_norm, int *tied, vt_error *err)
{
    const vt_gguf_tensor *te = vt_gguf_find_tensor(g, "token_embd.weight");
    if (!te)
        return vt_error_set(err, VT_EINPUT, "%s: tensor token_embd.weight: missing",
                            vt_gguf_name(g));
    if (te->ne[1] <= 0 || te->ne[1] > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "%s: tensor token_embd.weight: %lld rows: expected "
                            "1 .. 2^31-1 tokens", vt_gguf_name(g), (long long)te->ne[1]);
    *n_vocab = (int32_t)te->ne[1];
    int rc = vt_load_matrix(g, "token_embd.weight", n_embd, *n_vocab, embd, err);
    if (rc)
        return rc;
    if (!(*output_norm = vt_load_vector(g, "output_norm.weight", n_embd, err)))
        return err->code;
    *tied = vt_gguf_find_tensor(g, "output.weight") == NULL;
    if (*tied) {
        *output = *embd;
        return VT_OK;
    }
    return vt_load_matrix(g, "output.weight", n_embd, *n_vocab, output, err);
}
