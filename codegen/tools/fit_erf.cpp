// Offline tool: fits the polynomial coefficients used by templates/include/erf.glsl and
// prints them with the measured float32 error. Not part of the build; run it by hand:
//   g++ -O2 -std=c++20 codegen/tools/fit_erf.cpp -o /tmp/fit_erf && /tmp/fit_erf
// Fits minimise the maximum relative error (Lawson's iteratively reweighted least squares
// on Chebyshev points, solved by Householder QR in long double).
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

using ld = long double;

// Least squares min ||A c - b|| by Householder QR (A is m x n, row-major).
std::vector<ld> least_squares(std::vector<std::vector<ld>> a, std::vector<ld> b) {
  size_t m = a.size(), n = a[0].size();
  for (size_t k = 0; k < n; ++k) {
    ld norm = 0;
    for (size_t i = k; i < m; ++i)
      norm += a[i][k] * a[i][k];
    norm = std::sqrt(norm);
    ld alpha = a[k][k] > 0 ? -norm : norm;
    std::vector<ld> v(m, 0);
    for (size_t i = k; i < m; ++i)
      v[i] = a[i][k];
    v[k] -= alpha;
    ld vnorm = 0;
    for (size_t i = k; i < m; ++i)
      vnorm += v[i] * v[i];
    if (vnorm == 0)
      continue;
    for (size_t j = k; j < n; ++j) {
      ld dot = 0;
      for (size_t i = k; i < m; ++i)
        dot += v[i] * a[i][j];
      for (size_t i = k; i < m; ++i)
        a[i][j] -= 2 * v[i] * dot / vnorm;
    }
    ld dot = 0;
    for (size_t i = k; i < m; ++i)
      dot += v[i] * b[i];
    for (size_t i = k; i < m; ++i)
      b[i] -= 2 * v[i] * dot / vnorm;
  }
  std::vector<ld> c(n);
  for (size_t k = n; k-- > 0;) {
    ld s = b[k];
    for (size_t j = k + 1; j < n; ++j)
      s -= a[k][j] * c[j];
    c[k] = s / a[k][k];
  }
  return c;
}

// Coefficients c[0..deg] of p(t) = sum c_j (t - center)^j minimising max |p/f - 1| on [lo, hi].
std::vector<ld> fit(const std::function<ld(ld)>& f, ld lo, ld hi, int deg, ld center) {
  const int m = 600;
  std::vector<ld> t(m), fv(m), w(m, 1.0L / m);
  for (int i = 0; i < m; ++i) {
    t[i] = (lo + hi) / 2 + (hi - lo) / 2 * std::cos(M_PIl * (i + 0.5L) / m);
    fv[i] = f(t[i]);
  }
  std::vector<ld> c;
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<std::vector<ld>> a(m, std::vector<ld>(deg + 1));
    std::vector<ld> b(m);
    for (int i = 0; i < m; ++i) {
      ld sw = std::sqrt(w[i]);
      ld p = 1;
      for (int j = 0; j <= deg; ++j) {
        a[i][j] = sw * p / fv[i];
        p *= t[i] - center;
      }
      b[i] = sw;
    }
    c = least_squares(a, b);
    ld total = 0;
    for (int i = 0; i < m; ++i) {
      ld p = 0;
      for (int j = deg; j >= 0; --j)
        p = p * (t[i] - center) + c[j];
      w[i] *= std::fabs(p / fv[i] - 1) + 1e-30L;
      total += w[i];
    }
    for (auto& x : w)
      x /= total;
  }
  return c;
}

float horner(const std::vector<float>& c, float t) {
  float p = c.back();
  for (size_t j = c.size() - 1; j-- > 0;)
    p = p * t + c[j];
  return p;
}

std::vector<float> to_float(const std::vector<ld>& c) {
  return std::vector<float>(c.begin(), c.end());
}

void print(const char* name, const std::vector<float>& c) {
  std::printf("%s (highest degree first):\n", name);
  for (size_t j = c.size(); j-- > 0;)
    std::printf("  %.9ef\n", c[j]);
}

ld erfinv_ref(ld x) {
  // Newton on erf (or erfc near 1, where erf has no digits left).
  ld y = 0;
  bool tail = std::fabs(x) > 0.5L;
  ld target = tail ? 1 - std::fabs(x) : x;
  y = tail ? std::sqrt(-std::log(target)) : x;
  for (int i = 0; i < 200; ++i) {
    ld d = 2 / std::sqrt(M_PIl) * std::exp(-y * y);
    ld step = tail ? -(std::erfc(y) - target) / d : (std::erf(y) - target) / d;
    y -= step;
    if (std::fabs(step) < 1e-19L * std::fabs(y))
      break;
  }
  return tail ? std::copysign(y, x) : y;
}

ld ulp(float x) {
  return std::nextafter(std::fabs(x), INFINITY) - std::fabs(x);
}

int main() {
  // erf(x) = x P(x^2) on |x| <= 1.
  auto small =
      to_float(fit([](ld s) { return std::erf(std::sqrt(s)) / std::sqrt(s); }, 1e-12L, 1.0L, 6, 0));
  // erfc(x) = exp(-x^2) Q(1/x) on 1 <= x <= 4.
  auto tail = to_float(
      fit([](ld u) { return std::erfc(1 / u) * std::exp(1 / (u * u)); }, 0.25L, 1.0L, 10, 0));
  print("erf small", small);
  print("erfc tail (in 1/x)", tail);
  ld worst = 0, at = 0;
  for (int i = 0; i < 2000000; ++i) {
    float x = 4.0f * i / 2000000;
    float r;
    if (x <= 1.0f) {
      r = x * horner(small, x * x);
    } else {
      r = 1.0f - std::exp(-x * x) * horner(tail, 1.0f / x);
    }
    ld e = std::fabs(r - std::erf((ld)x)) / ulp((float)std::erf((ld)x));
    if (e > worst)
      worst = e, at = x;
  }
  std::printf("erf max error %.2Lf ulp at %.7Lf\n", worst, at);

  // erfinv(x) = x P(w - 2.5), w = -log(1 - x^2) < 5; else x Q(sqrt(w) - 3).
  auto x_of_w = [](ld w) { return std::sqrt(-std::expm1(-w)); };
  auto central = to_float(fit(
      [&](ld w) {
        ld x = x_of_w(w);
        return erfinv_ref(x) / x;
      },
      1e-12L, 5.0L, 9, 2.5L));
  auto outer = to_float(fit(
      [&](ld r) {
        ld x = x_of_w(r * r);
        return erfinv_ref(x) / x;
      },
      std::sqrt(5.0L), 4.2L, 9, 3.0L));
  print("erfinv central (in w - 2.5)", central);
  print("erfinv tail (in sqrt(w) - 3)", outer);
  worst = 0;
  for (int i = 1; i < 4000000; ++i) {
    float x = (float)i / 4000000;
    for (float xv : {x, std::nextafter(1.0f, 0.0f) - (float)i * 1e-13f}) {
      if (xv <= 0 || xv >= 1)
        continue;
      float w = -std::log((1.0f - xv) * (1.0f + xv));
      float r = w < 5.0f ? xv * horner(central, w - 2.5f) : xv * horner(outer, std::sqrt(w) - 3.0f);
      ld ref = erfinv_ref(xv);
      ld e = std::fabs(r - ref) / ulp((float)ref);
      if (e > worst)
        worst = e, at = xv;
    }
  }
  std::printf("erfinv max error %.2Lf ulp at %.9Lf (host logf)\n", worst, at);
}
