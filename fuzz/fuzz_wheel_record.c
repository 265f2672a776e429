/* Wheel RECORD parsing (provenance/package.c), past the zip: fuzz_wheel's
 * mutations of a RECORD inside a zip mostly break its CRC-32, refused
 * before RECORD is read. Here the bytes after the first are a RECORD:
 *   first byte even: zipped as the RECORD of a sound wheel made here (its
 *     two other members are what the rows may describe);
 *   odd: the installed RECORD of an installed copy of the good wheel (made
 *     once), checked with the wheel.
 * Installed paths may climb out with "../" (pip --target's layout): rows
 * that would reach above the scratch directory are not checked installed,
 * so that a run reads nothing outside it. */
#include "fuzz_util.h"

#include "provenance/prov_internal.h"
#include "provenance/provenance.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

static const char init_py[] = "x = 1\n";
static const char metadata[] = "Metadata-Version: 2.1\nName: w\nVersion: 1.0\n";
/* The good RECORD: sha256 as urlsafe base64 without padding (the wheel spec) */
static const char good_record[] = "w/__init__.py,sha256=nia_NpkRxFwkPGhBR7I_yeHc_PJX0pmhxjIBam_NM_Q,6\n"
                                  "w-1.0.dist-info/METADATA,sha256=GmBgOE3TOZxpqGMBM-u-iHr116D0oWn8mCaCiCZz8XY,43\n"
                                  "w-1.0.dist-info/RECORD,,\n";

static char good[128], wheel[128], site[128], installed_record[256];

static void add(struct archive *a, const char *name, const void *data, size_t n)
{
    struct archive_entry *e = archive_entry_new();
    if (!e)
        abort();
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)n);
    if (archive_write_header(a, e) != ARCHIVE_OK || (n && archive_write_data(a, data, n) != (la_ssize_t)n))
        abort();
    archive_entry_free(e);
}

static void make_wheel(const char *path, const void *record, size_t n)
{
    struct archive *a = archive_write_new();
    if (!a || archive_write_set_format_zip(a) != ARCHIVE_OK ||
        archive_write_zip_set_compression_store(a) != ARCHIVE_OK || archive_write_open_filename(a, path) != ARCHIVE_OK)
        abort();
    add(a, "w/__init__.py", init_py, sizeof init_py - 1);
    add(a, "w-1.0.dist-info/METADATA", metadata, sizeof metadata - 1);
    add(a, "w-1.0.dist-info/RECORD", record, n);
    if (archive_write_free(a) != ARCHIVE_OK)
        abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    char p[256];
    fz_path("good-1.0-py3-none-any.whl", good, sizeof good);
    fz_path("w-1.0-py3-none-any.whl", wheel, sizeof wheel);
    make_wheel(good, good_record, sizeof good_record - 1);
    /* site two levels down: "../../" still lands in the scratch directory */
    fz_path("a", p, sizeof p);
    fz_path("a/site", site, sizeof site);
    if (mkdir(p, 0700))
        abort();
    static const char *const dirs[] = { "", "/w", "/w-1.0.dist-info" };
    for (int i = 0; i < 3; i++)
        if (snprintf(p, sizeof p, "%s%s", site, dirs[i]) < 0 || mkdir(p, 0700))
            abort();
    snprintf(p, sizeof p, "%s/w/__init__.py", site);
    fz_write(p, init_py, sizeof init_py - 1);
    snprintf(p, sizeof p, "%s/w-1.0.dist-info/METADATA", site);
    fz_write(p, metadata, sizeof metadata - 1);
    snprintf(installed_record, sizeof installed_record, "%s/w-1.0.dist-info/RECORD", site);
    /* the good wheel checks clean against its installed copy, or the target tests nothing */
    fz_write(installed_record, good_record, sizeof good_record - 1);
    vt_package_report r;
    vt_error err;
    if (vt_package_verify_wheel(good, site, &r, &err) != VT_OK || !r.verified || r.installed_checked != 2) {
        fprintf(stderr, "fuzz_wheel_record: the good wheel does not verify: %s\n", err.msg);
        abort();
    }
    vt_package_report_free(&r);
    return 0;
}

/* Whether a row's path could reach above the scratch directory from site. */
static int climbs_out(const char *path)
{
    int up = 0;
    for (const char *s = path; (s = strstr(s, "..")) != NULL; s += 2)
        up++;
    return path[0] == '/' || up > 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    vt_package_report r;
    vt_error err;
    if ((data[0] & 1) == 0) {
        make_wheel(wheel, text, len);
        if (vt_package_verify_wheel(wheel, NULL, &r, &err) == VT_OK)
            vt_package_report_free(&r);
        return 0;
    }
    vt_record_row *rows = NULL;
    int n_rows = 0;
    if (vt_record_parse(text, len, &rows, &n_rows) == 0) {
        for (int i = 0; i < n_rows; i++)
            if (climbs_out(rows[i].path)) {
                vt_record_free(rows, n_rows);
                return 0;
            }
        vt_record_free(rows, n_rows);
    }
    fz_write(installed_record, text, len);
    if (vt_package_verify_wheel(good, site, &r, &err) == VT_OK)
        vt_package_report_free(&r);
    return 0;
}
