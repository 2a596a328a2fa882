#include "gl_renderer.h"

#include <algorithm>
#include <cstddef>

#include <QColor>
#include <QGuiApplication>
#include <QOffscreenSurface>
#include <QOpenGLBuffer>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QOpenGLShaderProgram>
#include <QPaintDevice>
#include <QPaintEngine>
#include <QPainter>
#include <QStringList>

namespace tt::gui {

namespace {

// GLSL 1.00 / 1.20 style so the same source builds on desktop GL 2.1+ (compatibility or a
// core context through Qt's translation) and OpenGL ES 2.
constexpr const char* kVertexShader = R"(
attribute highp vec2 pos;
attribute lowp vec4 color;
attribute lowp float hatch;
uniform highp vec2 scale;
varying lowp vec4 v_color;
varying lowp float v_hatch;
void main() {
  v_color = color;
  v_hatch = hatch;
  gl_Position = vec4(pos.x * scale.x - 1.0, 1.0 + pos.y * scale.y, 0.0, 1.0);
}
)";

// Merged runs carry QPainter's Qt::BDiagPattern: "/" lines 1 px wide on the pixels where
// (x + y) % 8 == 7, x and y counted from the top left. gl_FragCoord counts from the bottom and
// sits on pixel centres, so x + (height - y) is that pixel sum + 1.
constexpr const char* kFragmentShader = R"(
varying lowp vec4 v_color;
varying lowp float v_hatch;
uniform highp float height;
void main() {
  if (v_hatch > 0.5 && mod(gl_FragCoord.x + height - gl_FragCoord.y + 0.5, 8.0) >= 1.0) discard;
  gl_FragColor = v_color;
}
)";

std::uint32_t gl_rgba(QRgb c) {
  return static_cast<std::uint32_t>(qRed(c)) | static_cast<std::uint32_t>(qGreen(c)) << 8 |
         static_cast<std::uint32_t>(qBlue(c)) << 16 | static_cast<std::uint32_t>(qAlpha(c)) << 24;
}

void push_quad(std::vector<GlRenderer::Vertex>& v, double x, double y, double w, double h, QRgb color,
               bool hatch = false) {
  if (w <= 0 || h <= 0) return;
  const float x0 = static_cast<float>(x), y0 = static_cast<float>(y);
  const float x1 = static_cast<float>(x + w), y1 = static_cast<float>(y + h);
  const std::uint32_t c = gl_rgba(color);
  const float hf = hatch ? 1.f : 0.f;
  v.push_back({x0, y0, c, hf});
  v.push_back({x1, y0, c, hf});
  v.push_back({x0, y1, c, hf});
  v.push_back({x1, y0, c, hf});
  v.push_back({x1, y1, c, hf});
  v.push_back({x0, y1, c, hf});
}

// The same pixels PainterRenderer's rectangles cover: a fill, for merged runs a lighter fill
// and darker stripes, and an outline 2 px wide just inside the rectangle.
void push_rects(std::vector<GlRenderer::Vertex>& v, const std::vector<Frame::Rect>& rects) {
  for (const auto& r : rects) {
    const QRectF& q = r.r;
    if (r.hatched) {
      const QColor fill = QColor::fromRgba(r.fill);
      push_quad(v, q.x(), q.y(), q.width(), q.height(), fill.lighter(130).rgba());
      push_quad(v, q.x(), q.y(), q.width(), q.height(), fill.darker(140).rgba(), true);
    } else {
      push_quad(v, q.x(), q.y(), q.width(), q.height(), r.fill);
    }
    if (r.outline) {
      const double w = std::min(2.0, q.width() / 2), h = std::min(2.0, q.height() / 2);
      push_quad(v, q.x(), q.y(), q.width(), h, r.outline);
      push_quad(v, q.x(), q.bottom() - h, q.width(), h, r.outline);
      push_quad(v, q.x(), q.y(), w, q.height(), r.outline);
      push_quad(v, q.right() - w, q.y(), w, q.height(), r.outline);
    }
  }
}

// Overlays (selections, highlights, tooltips) take QPainter::drawRect's 1-px cosmetic outline,
// which covers the right and bottom edges' pixels too.
void push_overlays(std::vector<GlRenderer::Vertex>& v, const std::vector<Frame::Rect>& rects) {
  for (const auto& r : rects) {
    const QRectF& q = r.r;
    push_quad(v, q.x(), q.y(), q.width(), q.height(), r.fill);
    if (r.outline) {
      push_quad(v, q.x(), q.y(), q.width() + 1, 1, r.outline);
      push_quad(v, q.x(), q.bottom(), q.width() + 1, 1, r.outline);
      push_quad(v, q.x(), q.y() + 1, 1, q.height() - 1, r.outline);
      push_quad(v, q.right(), q.y() + 1, 1, q.height() - 1, r.outline);
    }
  }
}

}  // namespace

GlRenderer::GlRenderer() = default;

// Qt's GL resource guards free the names in their own context, or later when that context is
// current again (or with it when it is destroyed), so nothing here needs a current context.
GlRenderer::~GlRenderer() = default;

void GlRenderer::releaseGl() {
  buffer_.reset();
  program_.reset();
  context_ = nullptr;
}

bool GlRenderer::ensureGl() {
  auto* ctx = QOpenGLContext::currentContext();
  if (!ctx || broken_) return false;
  if (ctx == context_ && program_) return true;
  // a new context (the widget was re-parented, or another FBO's context): new names
  releaseGl();
  auto program = std::make_unique<QOpenGLShaderProgram>();
  if (!program->addShaderFromSourceCode(QOpenGLShader::Vertex, kVertexShader) ||
      !program->addShaderFromSourceCode(QOpenGLShader::Fragment, kFragmentShader) || !program->link()) {
    qWarning("tracetune-gui: OpenGL shaders failed to build (%s); drawing with QPainter",
             qPrintable(program->log().trimmed()));
    broken_ = true;
    return false;
  }
  loc_pos_ = program->attributeLocation("pos");
  loc_color_ = program->attributeLocation("color");
  loc_hatch_ = program->attributeLocation("hatch");
  loc_scale_ = program->uniformLocation("scale");
  loc_height_ = program->uniformLocation("height");
  auto buffer = std::make_unique<QOpenGLBuffer>(QOpenGLBuffer::VertexBuffer);
  buffer->setUsagePattern(QOpenGLBuffer::StreamDraw);
  if (!buffer->create()) {
    qWarning("tracetune-gui: cannot create an OpenGL vertex buffer; drawing with QPainter");
    broken_ = true;
    return false;
  }
  program_ = std::move(program);
  buffer_ = std::move(buffer);
  context_ = ctx;
  const auto* r = reinterpret_cast<const char*>(ctx->functions()->glGetString(GL_RENDERER));
  description_ = r ? QString::fromLatin1(r) : QStringLiteral("unknown");
  return true;
}

void GlRenderer::drawBatch(const std::vector<Vertex>& v, float w, float h, float device_h) {
  if (v.empty()) return;
  auto* gl = context_->functions();
  gl->glDisable(GL_DEPTH_TEST);
  gl->glDisable(GL_SCISSOR_TEST);
  gl->glDisable(GL_STENCIL_TEST);
  gl->glEnable(GL_BLEND);
  // straight alpha over an opaque background; keep the target's alpha at 1 so the composed
  // widget stays opaque
  gl->glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
  program_->bind();
  program_->setUniformValue(loc_scale_, 2.0f / w, -2.0f / h);
  program_->setUniformValue(loc_height_, device_h);
  buffer_->bind();
  buffer_->allocate(v.data(), static_cast<int>(v.size() * sizeof(Vertex)));
  program_->enableAttributeArray(loc_pos_);
  program_->enableAttributeArray(loc_color_);
  program_->enableAttributeArray(loc_hatch_);
  program_->setAttributeBuffer(loc_pos_, GL_FLOAT, offsetof(Vertex, x), 2, sizeof(Vertex));
  gl->glVertexAttribPointer(static_cast<GLuint>(loc_color_), 4, GL_UNSIGNED_BYTE, GL_TRUE, sizeof(Vertex),
                            reinterpret_cast<const void*>(offsetof(Vertex, rgba)));
  program_->setAttributeBuffer(loc_hatch_, GL_FLOAT, offsetof(Vertex, hatch), 1, sizeof(Vertex));
  gl->glDrawArrays(GL_TRIANGLES, 0, static_cast<GLsizei>(v.size()));
  program_->disableAttributeArray(loc_pos_);
  program_->disableAttributeArray(loc_color_);
  program_->disableAttributeArray(loc_hatch_);
  buffer_->release();
  program_->release();
}

void GlRenderer::render(const Frame& f, QPainter& p) {
  const auto* engine = p.paintEngine();
  if (!engine || engine->type() != QPaintEngine::OpenGL2) {
    ++fallback_frames_;
    fallback_.render(f, p);
    return;
  }
  const auto* dev = p.device();
  const float w = static_cast<float>(dev->width()), h = static_cast<float>(dev->height());
  const float device_h = static_cast<float>(dev->height() * dev->devicePixelRatioF());
  p.setRenderHint(QPainter::Antialiasing, false);
  p.beginNativePainting();
  if (!ensureGl()) {
    p.endNativePainting();
    ++fallback_frames_;
    fallback_.render(f, p);
    return;
  }
  batch_.clear();
  push_quad(batch_, 0, 0, w, h, f.background);
  push_rects(batch_, f.rects);
  drawBatch(batch_, w, h, device_h);
  p.endNativePainting();
  paint_lines(f.lines, p);
  paint_texts(f.texts, p);
  if (!f.overlays.empty()) {
    p.beginNativePainting();
    batch_.clear();
    push_overlays(batch_, f.overlays);
    drawBatch(batch_, w, h, device_h);
    p.endNativePainting();
  }
  paint_texts(f.overlay_texts, p);
  ++gl_frames_;
}

bool software_opengl(const QString& renderer) {
  for (const char* s : {"llvmpipe", "softpipe", "swrast", "Software Rasterizer", "SwiftShader", "lavapipe"})
    if (renderer.contains(QLatin1String(s), Qt::CaseInsensitive)) return true;
  return false;
}

bool opengl_available(QString* why, QString* renderer) {
  static int state = -1;  // -1 unknown, 0 no, 1 yes
  static QString reason, name;
  // QOpenGLWidget needs a platform that composes GL into windows: the offscreen platform can
  // make a GLX context when $DISPLAY is set, yet it says "QOpenGLWidget is not supported on
  // this platform" and crashes on the first flush (Qt 6.4), so only these are tried
  static const QStringList kGlPlatforms = {"xcb", "wayland", "wayland-egl", "eglfs", "windows", "cocoa"};
  if (state < 0 && !kGlPlatforms.contains(QGuiApplication::platformName())) {
    state = 0;
    reason = QStringLiteral("no OpenGL widgets on the '%1' platform").arg(QGuiApplication::platformName());
  }
  if (state < 0) {
    QOpenGLContext ctx;
    QOffscreenSurface surface;
    surface.create();
    if (!ctx.create()) {
      state = 0;
      reason = QStringLiteral("no OpenGL context on the '%1' platform").arg(QGuiApplication::platformName());
    } else if (!surface.isValid() || !ctx.makeCurrent(&surface)) {
      state = 0;
      reason = QStringLiteral("an OpenGL context cannot be made current on the '%1' platform")
                   .arg(QGuiApplication::platformName());
    } else {
      state = 1;
      const auto* r = reinterpret_cast<const char*>(ctx.functions()->glGetString(GL_RENDERER));
      name = r ? QString::fromLatin1(r) : QStringLiteral("unknown");
      ctx.doneCurrent();
    }
  }
  if (why) *why = reason;
  if (renderer) *renderer = name;
  return state == 1;
}

}  // namespace tt::gui
