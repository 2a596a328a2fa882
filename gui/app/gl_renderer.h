// The OpenGL FrameRenderer. A frame's rectangles (event blocks, merged runs, row stripes,
// counter columns: nearly all of what is drawn) go to the GPU as one vertex batch per layer,
// two triangles per rectangle, one draw call; hatching of merged runs is done in the fragment
// shader. Lines and labels, a few hundred per frame, are drawn with QPainter on top, which on
// a QOpenGLWidget is Qt's own OpenGL paint engine.
//
// render() needs a QPainter on an OpenGL paint device (a QOpenGLWidget, or a
// QOpenGLPaintDevice on an FBO) with its context current; on any other device (a QImage for
// --screenshot, QWidget::grab of a raster widget) it draws with PainterRenderer instead, so
// the result never depends on where the frame is painted.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "renderer.h"

class QOpenGLContext;
class QOpenGLShaderProgram;
class QOpenGLBuffer;

namespace tt::gui {

class GlRenderer final : public FrameRenderer {
 public:
  GlRenderer();
  ~GlRenderer() override;
  void render(const Frame& f, QPainter& p) override;
  QString name() const override { return QStringLiteral("OpenGL"); }

  // Frees the GL objects; call with the context they were made in current (before it dies).
  void releaseGl();
  // Frames drawn through OpenGL / through the QPainter fallback (tests, status).
  std::uint64_t glFrames() const { return gl_frames_; }
  std::uint64_t fallbackFrames() const { return fallback_frames_; }
  // The GL_RENDERER string of the context last drawn with ("" before the first GL frame).
  const QString& glDescription() const { return description_; }

  struct Vertex {
    float x, y;
    std::uint32_t rgba;  // bytes R, G, B, A in memory order
    float hatch;         // 1: only the diagonal stripes of the pattern are drawn
  };

 private:
  bool ensureGl();
  void drawBatch(const std::vector<Vertex>& v, float w, float h, float device_h);

  PainterRenderer fallback_;
  QOpenGLContext* context_ = nullptr;
  std::unique_ptr<QOpenGLShaderProgram> program_;
  std::unique_ptr<QOpenGLBuffer> buffer_;
  int loc_pos_ = -1, loc_color_ = -1, loc_hatch_ = -1, loc_scale_ = -1, loc_height_ = -1;
  std::vector<Vertex> batch_;
  std::uint64_t gl_frames_ = 0, fallback_frames_ = 0;
  QString description_;
  bool broken_ = false;  // shaders failed to build: every frame falls back
};

// Whether an OpenGL context can be made on this platform (false on the offscreen and
// minimal platforms without GLX/EGL, or without a driver), and its GL_RENDERER string.
// Cheap after the first call.
bool opengl_available(QString* why = nullptr, QString* renderer = nullptr);
// A CPU rasteriser (Mesa llvmpipe and kin). There the OpenGL renderer is slower than QPainter
// (bench/gui_bench: 16.8 vs 3.4 ms median per frame on llvmpipe), so --renderer auto avoids it.
bool software_opengl(const QString& renderer);

}  // namespace tt::gui
