// What nbgrader's submission page ran inline: showing and hiding the student's name.
function toggle_name(on) {
  $(".name-shown").tooltip("hide");
  $(".name-hidden").tooltip("hide");
  if (on) {
    $(".name-shown").show();
    $(".name-hidden").hide();
  } else {
    $(".name-hidden").show();
    $(".name-shown").hide();
  }
}

$(document).ready(function () {
  $("span.glyphicon.name-hidden").tooltip({title: "Show student name", placement: "bottom", trigger: "hover"})
    .on("click", function () { toggle_name(true); });
  $("span.glyphicon.name-shown").tooltip({title: "Hide student name", placement: "bottom", trigger: "hover"})
    .on("click", function () { toggle_name(false); });
});
